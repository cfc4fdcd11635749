// RepConv — the RepVGG-style block of the YOLO family (ultralytics, nn/modules/conv.py; used
// by RT-DETR and YOLOv6/7-style necks), with ultralytics' child and parameter names.
//
// Training form:
//   y = act( conv1(x) + conv2(x) + bn(x) )
//   children  act (SiLU by default), bn (BatchNorm2d(c1); only when requested with bn(true) and
//             c1 == c2 and stride 1), conv1 (ultralytics Conv: "conv" K×K no bias, "bn",
//             "act" Identity), conv2 (Conv: 1×1, padding − K/2, same stride and groups)
//   state_dict  bn.{…}, conv1.conv.weight, conv1.bn.{…}, conv2.conv.weight, conv2.bn.{…}
// Deployed form (ultralytics' fuse_convs): act(conv(x)), "conv" the K×K Conv2d with bias:
//   W = fold(conv1) + pad_K(fold(conv2)) + fold(identity_K),   b = Σ folded biases.
// Generalizes the reference's `k == 3 and p == 1` assertion to any odd K with padding ≥ K/2.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "refold/nn/module.h"
#include "refold/op_options.h"
#include "refold/reparam/block.h"

namespace refold::reparam {

class RepConvOptions {
 public:
  RepConvOptions(std::int64_t c1, std::int64_t c2) : c1_(c1), c2_(c2) {}

  // Defaults (ultralytics): k 3, s 1, p 1, g 1, act SiLU, no identity BN, training form.
  RepConvOptions& kernel_size(std::int64_t value) {
    kernel_size_ = value;
    return *this;
  }
  RepConvOptions& stride(Size2d value) {
    stride_ = value;
    return *this;
  }
  RepConvOptions& padding(std::int64_t value) {
    padding_ = value;
    return *this;
  }
  RepConvOptions& groups(std::int64_t value) {
    groups_ = value;
    return *this;
  }
  // The identity branch: a BatchNorm2d(c1), created only when c1 == c2 and stride is 1.
  RepConvOptions& bn(bool value) {
    bn_ = value;
    return *this;
  }
  RepConvOptions& deploy(bool value) {
    deploy_ = value;
    return *this;
  }
  // The "act" child; nullptr (the default) means a fresh nn::SiLU; pass an nn::Identity for
  // ultralytics' act=False.
  RepConvOptions& activation(nn::ModulePtr value) {
    activation_ = std::move(value);
    return *this;
  }

  std::int64_t in_channels() const { return c1_; }
  std::int64_t out_channels() const { return c2_; }
  std::int64_t kernel_size() const { return kernel_size_; }
  Size2d stride() const { return stride_; }
  std::int64_t padding() const { return padding_; }
  std::int64_t groups() const { return groups_; }
  bool bn() const { return bn_; }
  bool deploy() const { return deploy_; }
  const nn::ModulePtr& activation() const { return activation_; }

 private:
  std::int64_t c1_;
  std::int64_t c2_;
  std::int64_t kernel_size_ = 3;
  Size2d stride_ = 1;
  std::int64_t padding_ = 1;
  std::int64_t groups_ = 1;
  bool bn_ = false;
  bool deploy_ = false;
  nn::ModulePtr activation_;
};

class RepConv : public RepBlock {
 public:
  explicit RepConv(const RepConvOptions& options);
  const RepConvOptions& options() const { return options_; }

 protected:
  ConvKernel fuse_branches() const override;
  std::string main_conv_path() const override { return "conv1.conv"; }
  std::vector<std::string> branch_names() const override;
  Tensor forward_branches(const Tensor& input) override;
  Tensor forward_deployed(const Tensor& conv_output) override;
  std::int64_t branch_flops(const Shape& input) const override;

 private:
  RepConvOptions options_;
};

}  // namespace refold::reparam
