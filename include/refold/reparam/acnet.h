// ACBlock — ACNet's asymmetric convolution block (DingXiaoH/ACNet, acnet/acb.py), with the
// reference's child and parameter names.
//
// Training form (no activation):
//   y = BN_s(conv_K×K(x)) + BN_v(conv_K×1(x_v)) + BN_h(conv_1×K(x_h))
//   children  square_conv (K×K, no bias), square_bn, ver_conv (K×1), hor_conv (1×K), ver_bn,
//             hor_bn — the reference's order, which is the state_dict order
//   paddings  with c = padding − d·(K/2) ≥ 0 (d the dilation):  hor_conv (c, padding),
//             ver_conv (padding, c), and x_v = x_h = x. With c < 0 (dilation 1 only) the
//             reference crops instead (nn.Conv2d has no negative padding):
//             x_v = x[..., :, −c : W + c], x_h = x[..., −c : H + c, :], paddings
//             hor (0, padding), ver (padding, 0). The reference writes K/2 for d·(K/2), which
//             is the same for dilation 1 and misaligns the windows otherwise.
// Deployed form: "fused_conv", a K×K Conv2d with bias, the square conv's geometry:
//   W = fold(square) + pad_K(fold(ver)) + pad_K(fold(hor)),   b = Σ folded biases.
// The reference's gamma initialisation options (reduce_gamma, gamma_init) are training
// concerns and are not provided.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/op_options.h"
#include "refold/reparam/block.h"

namespace refold::reparam {

class ACBlockOptions {
 public:
  ACBlockOptions(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel_size)
      : in_channels_(in_channels), out_channels_(out_channels), kernel_size_(kernel_size) {}

  // Defaults: stride 1, padding kernel_size / 2, dilation 1, groups 1, affine BNs, training.
  ACBlockOptions& stride(Size2d value) {
    stride_ = value;
    return *this;
  }
  ACBlockOptions& padding(std::int64_t value) {
    padding_ = value;
    return *this;
  }
  ACBlockOptions& dilation(Size2d value) {
    dilation_ = value;
    return *this;
  }
  ACBlockOptions& groups(std::int64_t value) {
    groups_ = value;
    return *this;
  }
  // The three BNs' `affine` (the reference's use_affine).
  ACBlockOptions& use_affine(bool value) {
    use_affine_ = value;
    return *this;
  }
  ACBlockOptions& deploy(bool value) {
    deploy_ = value;
    return *this;
  }

  std::int64_t in_channels() const { return in_channels_; }
  std::int64_t out_channels() const { return out_channels_; }
  std::int64_t kernel_size() const { return kernel_size_; }
  Size2d stride() const { return stride_; }
  std::int64_t padding() const { return padding_.value_or(kernel_size_ / 2); }
  Size2d dilation() const { return dilation_; }
  std::int64_t groups() const { return groups_; }
  bool use_affine() const { return use_affine_; }
  bool deploy() const { return deploy_; }

 private:
  std::int64_t in_channels_;
  std::int64_t out_channels_;
  std::int64_t kernel_size_;
  Size2d stride_ = 1;
  std::optional<std::int64_t> padding_;
  Size2d dilation_ = 1;
  std::int64_t groups_ = 1;
  bool use_affine_ = true;
  bool deploy_ = false;
};

class ACBlock : public RepBlock {
 public:
  explicit ACBlock(const ACBlockOptions& options);
  const ACBlockOptions& options() const { return options_; }
  // Input rows/columns cropped from each side before the hor/ver convs (0 unless
  // padding < kernel_size / 2).
  std::int64_t crop() const { return crop_; }

 protected:
  ConvKernel fuse_branches() const override;
  std::string main_conv_path() const override { return "square_conv"; }
  std::vector<std::string> branch_names() const override;
  Tensor forward_branches(const Tensor& input) override;
  Tensor forward_deployed(const Tensor& conv_output) override { return conv_output; }
  std::int64_t branch_flops(const Shape& input) const override;

 private:
  ACBlockOptions options_;
  std::int64_t crop_ = 0;
};

}  // namespace refold::reparam
