// DiverseBranchBlock (DBB; DingXiaoH/DiverseBranchBlock, diversebranchblock.py), with the
// reference's child and parameter names.
//
// Training form, K×K with padding P = K/2, stride s, g groups:
//   y = nonlinear( dbb_origin(x) + dbb_1x1(x) + dbb_avg(x) + dbb_1x1_kxk(x) )
//   dbb_origin    conv_bn: K×K conv (no bias) + bn
//   dbb_1x1       conv_bn: 1×1, stride s, padding 0                 (only when g < out)
//   dbb_avg       g < out:  conv (1×1, in→out, g, no bias) → bn (BNAndPadLayer(P))
//                           → avg (AvgPool2d(K, s, padding 0)) → avgbn
//                 else:     avg (AvgPool2d(K, s, padding P)) → avgbn  (averages x itself)
//   dbb_1x1_kxk   idconv1 (IdentityBasedConv1x1(in, g); when the internal width == in) or
//                 conv1 (1×1, in→internal, g, no bias) → bn1 (BNAndPadLayer(P))
//                 → conv2 (K×K, internal→out, stride s, padding 0, g) → bn2
//   internal width: internal_channels_1x1_3x3, by default in if g < out else 2·in
//   nonlinear     Identity unless given
// Deployed form: nonlinear(dbb_reparam(x)), "dbb_reparam" the K×K Conv2d with bias:
//   W = fold(origin) + pad_K(fold(1×1))
//     + merge_1x1_kxk(fold(conv1 or W_id + I, bn1), fold(conv2, bn2))
//     + merge_1x1_kxk(fold(conv, bn), fold(avg_K, avgbn))      (or fold(avg_K, avgbn))
// The 1×1 → K×K merges are exact at the border because BNAndPad pads with the BN's output for
// a zero input (docs/reparameterization.md, "Sequential 1×1 → K×K").
// state_dict (g < out, internal == in): dbb_origin.conv.weight, dbb_origin.bn.{…},
//   dbb_avg.conv.weight, dbb_avg.bn.bn.{…}, dbb_avg.avgbn.{…}, dbb_1x1.conv.weight,
//   dbb_1x1.bn.{…}, dbb_1x1_kxk.idconv1.weight, dbb_1x1_kxk.bn1.bn.{…},
//   dbb_1x1_kxk.conv2.weight, dbb_1x1_kxk.bn2.{…}
// The reference's single_init / init_gamma are training concerns and are not provided; like the
// reference, dilation is not an option (its conv2 and avg branches have none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/nn/module.h"
#include "refold/op_options.h"
#include "refold/reparam/block.h"

namespace refold::reparam {

class DiverseBranchBlockOptions {
 public:
  DiverseBranchBlockOptions(std::int64_t in_channels, std::int64_t out_channels,
                            std::int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  // Defaults: stride 1, padding kernel_size / 2 (the only value the reference accepts),
  // groups 1, internal width as above, training form, Identity nonlinearity.
  DiverseBranchBlockOptions& stride(Size2d value) {
    stride_ = value;
    return *this;
  }
  DiverseBranchBlockOptions& padding(std::int64_t value) {
    padding_ = value;
    return *this;
  }
  DiverseBranchBlockOptions& groups(std::int64_t value) {
    groups_ = value;
    return *this;
  }
  DiverseBranchBlockOptions& internal_channels_1x1_3x3(std::int64_t value) {
    internal_ = value;
    return *this;
  }
  DiverseBranchBlockOptions& deploy(bool value) {
    deploy_ = value;
    return *this;
  }
  // The "nonlinear" child; nullptr (the default) means a fresh nn::Identity.
  DiverseBranchBlockOptions& nonlinear(nn::ModulePtr value) {
    nonlinear_ = std::move(value);
    return *this;
  }

  std::int64_t in_channels() const { return in_channels_; }
  std::int64_t out_channels() const { return out_channels_; }
  std::int64_t kernel_size() const { return kernel_size_; }
  Size2d stride() const { return stride_; }
  std::int64_t padding() const { return padding_.value_or(kernel_size_ / 2); }
  std::int64_t groups() const { return groups_; }
  std::int64_t internal_channels_1x1_3x3() const {
    return internal_.value_or(groups_ < out_channels_ ? in_channels_ : 2 * in_channels_);
  }
  bool deploy() const { return deploy_; }
  const nn::ModulePtr& nonlinear() const { return nonlinear_; }

 private:
  std::int64_t in_channels_;
  std::int64_t out_channels_;
  std::int64_t kernel_size_;
  Size2d stride_ = 1;
  std::optional<std::int64_t> padding_;
  std::int64_t groups_ = 1;
  std::optional<std::int64_t> internal_;
  bool deploy_ = false;
  nn::ModulePtr nonlinear_;
};

class DiverseBranchBlock : public RepBlock {
 public:
  // Validates the options ("DiverseBranchBlock: padding (2) must be kernel_size / 2 (1)", …).
  explicit DiverseBranchBlock(const DiverseBranchBlockOptions& options);
  const DiverseBranchBlockOptions& options() const { return options_; }

 protected:
  ConvKernel fuse_branches() const override;
  std::string main_conv_path() const override { return "dbb_origin.conv"; }
  std::vector<std::string> branch_names() const override;
  Tensor forward_branches(const Tensor& input) override;
  Tensor forward_deployed(const Tensor& conv_output) override;
  std::int64_t branch_flops(const Shape& input) const override;

 private:
  // The 1×1 → K×K branch, the average branch: each as one K×K kernel after its checks.
  ConvKernel fuse_1x1_kxk() const;
  ConvKernel fuse_avg() const;
  // A first 1×1 conv of a sequence (dbb_avg.conv, dbb_1x1_kxk.conv1): stride 1, no padding, the
  // block's in_channels and groups.
  void check_first_1x1(const std::string& name, const nn::Conv2d& conv) const;

  DiverseBranchBlockOptions options_;
};

}  // namespace refold::reparam
