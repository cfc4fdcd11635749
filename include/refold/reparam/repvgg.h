// RepVGGBlock (DingXiaoH/RepVGG, repvgg.py) and QARepVGGBlock (the quantization-friendly variant
// of meituan/YOLOv6, layers/common.py), with the references' child and parameter names.
//
// RepVGGBlock, training form:
//   y = nonlinearity(se( BN_d(conv_K(x)) + BN_1(conv_1x1(x)) + BN_id(x) ))
//   children  nonlinearity (ReLU), se (Identity: the SE variant is not provided),
//             rbr_identity (BatchNorm2d(in); only when in == out and stride == 1),
//             rbr_dense (conv_bn: "conv" K×K no bias + "bn"),
//             rbr_1x1  (conv_bn: 1×1, padding − K/2, same stride and groups)
//   state_dict  rbr_identity.{weight,bias,running_mean,running_var,num_batches_tracked},
//               rbr_dense.conv.weight, rbr_dense.bn.{…}, rbr_1x1.conv.weight, rbr_1x1.bn.{…}
// Deployed form: nonlinearity(se(rbr_reparam(x))), "rbr_reparam" a K×K Conv2d with bias:
//   W = fold(dense) + pad_K(fold(1×1)) + fold(identity_K),   b = the same sum of biases.
//
// QARepVGGBlock, training form (one BN after the sum; the 1×1 and the identity carry none):
//   y = nonlinearity(bn(se( BN_d(conv_K(x)) + conv_1x1(x) + x )))
//   children  nonlinearity, se, rbr_identity (Identity; only when in == out and stride == 1),
//             rbr_dense (conv_bn), rbr_1x1 (Conv2d 1×1, no bias), bn (BatchNorm2d(out))
// Deployed form: nonlinearity(se(rbr_reparam(x))) with the BN after the sum folded in as well:
//   W = fold_bn( fold(dense) + pad_K(conv_1x1) + identity_K ).
// YOLOv6's switch_to_deploy keeps `bn` beside rbr_reparam (for quantization-aware training);
// refold does not train, so it folds it and the block becomes one conv. A YOLOv6 checkpoint
// saved AFTER its switch_to_deploy therefore has bn.* keys the refold deployed form lacks: load
// the training-form checkpoint and reparameterize() instead.
//
// Both generalize the references' `kernel_size == 3, padding == 1` assertion to any odd K with
// padding ≥ K/2 (the 1×1 branch gets padding − K/2, which centers it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "refold/nn/module.h"
#include "refold/op_options.h"
#include "refold/reparam/block.h"

namespace refold::reparam {

class RepVGGBlockOptions {
 public:
  RepVGGBlockOptions(std::int64_t in_channels, std::int64_t out_channels)
      : in_channels_(in_channels), out_channels_(out_channels) {}

  // Defaults: kernel_size 3, stride 1, padding 1, groups 1, training form, ReLU.
  RepVGGBlockOptions& kernel_size(std::int64_t value) {
    kernel_size_ = value;
    return *this;
  }
  RepVGGBlockOptions& stride(Size2d value) {
    stride_ = value;
    return *this;
  }
  RepVGGBlockOptions& padding(std::int64_t value) {
    padding_ = value;
    return *this;
  }
  RepVGGBlockOptions& groups(std::int64_t value) {
    groups_ = value;
    return *this;
  }
  // Build the deployed form directly (a checkpoint saved after switch_to_deploy loads into it).
  RepVGGBlockOptions& deploy(bool value) {
    deploy_ = value;
    return *this;
  }
  // The "nonlinearity" child; nullptr (the default) means a fresh nn::ReLU.
  RepVGGBlockOptions& activation(nn::ModulePtr value) {
    activation_ = std::move(value);
    return *this;
  }

  std::int64_t in_channels() const { return in_channels_; }
  std::int64_t out_channels() const { return out_channels_; }
  std::int64_t kernel_size() const { return kernel_size_; }
  Size2d stride() const { return stride_; }
  std::int64_t padding() const { return padding_; }
  std::int64_t groups() const { return groups_; }
  bool deploy() const { return deploy_; }
  const nn::ModulePtr& activation() const { return activation_; }

 private:
  std::int64_t in_channels_;
  std::int64_t out_channels_;
  std::int64_t kernel_size_ = 3;
  Size2d stride_ = 1;
  std::int64_t padding_ = 1;
  std::int64_t groups_ = 1;
  bool deploy_ = false;
  nn::ModulePtr activation_;
};

class RepVGGBlock : public RepBlock {
 public:
  // Validates the options (channels and groups, odd kernel, padding ≥ kernel_size/2) and throws
  // refold::Error, e.g. "RepVGGBlock: kernel_size (4) must be odd".
  explicit RepVGGBlock(const RepVGGBlockOptions& options);
  const RepVGGBlockOptions& options() const { return options_; }

 protected:
  // For QARepVGGBlock, which shares the options and the deployed form.
  RepVGGBlock(std::string type_name, const RepVGGBlockOptions& options);

  ConvKernel fuse_branches() const override;
  std::string main_conv_path() const override { return "rbr_dense.conv"; }
  std::vector<std::string> branch_names() const override;
  Tensor forward_branches(const Tensor& input) override;
  Tensor forward_deployed(const Tensor& conv_output) override;
  std::int64_t branch_flops(const Shape& input) const override;

  // nonlinearity(se(x))
  Tensor activate(const Tensor& x);

 private:
  RepVGGBlockOptions options_;
};

class QARepVGGBlock : public RepVGGBlock {
 public:
  explicit QARepVGGBlock(const RepVGGBlockOptions& options);

 protected:
  ConvKernel fuse_branches() const override;
  std::vector<std::string> branch_names() const override;
  Tensor forward_branches(const Tensor& input) override;
  std::int64_t branch_flops(const Shape& input) const override;
};

}  // namespace refold::reparam
