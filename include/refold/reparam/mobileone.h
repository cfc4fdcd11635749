// MobileOneBlock (apple/ml-mobileone, mobileone.py), with the reference's child and parameter
// names. MobileOne uses it twice per unit: depthwise (K = 3, groups = channels) and pointwise
// (K = 1), each with k over-parameterized conv branches.
//
// Training form:
//   y = activation(se( BN_skip(x) + BN_s(conv_1x1(x)) + Σ_i BN_i(conv_K,i(x)) ))
//   children  se (Identity: the SE variant is not provided), activation (ReLU),
//             rbr_skip  (BatchNorm2d(in); only when in == out and stride == 1),
//             rbr_conv  (ModuleList of num_conv_branches conv_bn: K×K, padding, stride, groups),
//             rbr_scale (conv_bn 1×1, padding 0; only when K > 1)
//   state_dict  rbr_skip.{…}, rbr_conv.0.conv.weight, rbr_conv.0.bn.{…}, …, rbr_scale.conv.weight,
//               rbr_scale.bn.{…}
// Deployed form: activation(se(reparam_conv(x))), "reparam_conv" the K×K Conv2d with bias:
//   W = Σ_i fold(conv_i) + pad_K(fold(scale)) + fold(identity_K),   b = Σ folded biases.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/nn/module.h"
#include "refold/op_options.h"
#include "refold/reparam/block.h"

namespace refold::reparam {

class MobileOneBlockOptions {
 public:
  MobileOneBlockOptions(std::int64_t in_channels, std::int64_t out_channels,
                        std::int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  // Defaults: stride 1, padding kernel_size / 2, groups 1, one conv branch, training, ReLU.
  MobileOneBlockOptions& stride(Size2d value) {
    stride_ = value;
    return *this;
  }
  MobileOneBlockOptions& padding(std::int64_t value) {
    padding_ = value;
    return *this;
  }
  MobileOneBlockOptions& groups(std::int64_t value) {
    groups_ = value;
    return *this;
  }
  MobileOneBlockOptions& num_conv_branches(std::int64_t value) {
    num_conv_branches_ = value;
    return *this;
  }
  // The reference's inference_mode: build the deployed form directly.
  MobileOneBlockOptions& deploy(bool value) {
    deploy_ = value;
    return *this;
  }
  // The "activation" child; nullptr (the default) means a fresh nn::ReLU.
  MobileOneBlockOptions& activation(nn::ModulePtr value) {
    activation_ = std::move(value);
    return *this;
  }

  std::int64_t in_channels() const { return in_channels_; }
  std::int64_t out_channels() const { return out_channels_; }
  std::int64_t kernel_size() const { return kernel_size_; }
  Size2d stride() const { return stride_; }
  std::int64_t padding() const { return padding_.value_or(kernel_size_ / 2); }
  std::int64_t groups() const { return groups_; }
  std::int64_t num_conv_branches() const { return num_conv_branches_; }
  bool deploy() const { return deploy_; }
  const nn::ModulePtr& activation() const { return activation_; }

 private:
  std::int64_t in_channels_;
  std::int64_t out_channels_;
  std::int64_t kernel_size_;
  Size2d stride_ = 1;
  std::optional<std::int64_t> padding_;
  std::int64_t groups_ = 1;
  std::int64_t num_conv_branches_ = 1;
  bool deploy_ = false;
  nn::ModulePtr activation_;
};

class MobileOneBlock : public RepBlock {
 public:
  // Validates the options ("MobileOneBlock: num_conv_branches (0) must be at least 1", …).
  explicit MobileOneBlock(const MobileOneBlockOptions& options);
  const MobileOneBlockOptions& options() const { return options_; }

 protected:
  ConvKernel fuse_branches() const override;
  std::string main_conv_path() const override { return "rbr_conv.0.conv"; }
  std::vector<std::string> branch_names() const override;
  Tensor forward_branches(const Tensor& input) override;
  Tensor forward_deployed(const Tensor& conv_output) override;
  std::int64_t branch_flops(const Shape& input) const override;

 private:
  // "rbr_conv.0", "rbr_conv.1", … as registered.
  std::vector<std::string> conv_branch_paths() const;

  MobileOneBlockOptions options_;
};

}  // namespace refold::reparam
