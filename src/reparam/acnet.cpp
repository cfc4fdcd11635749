// ACBlock; the math and the names are in refold/reparam/acnet.h.
#include "refold/reparam/acnet.h"

#include <memory>

#include "core/check.h"
#include "refold/functional.h"
#include "refold/nn/batchnorm.h"
#include "refold/reparam/module_kernels.h"
#include "reparam/flops.h"

namespace refold::reparam {

ACBlock::ACBlock(const ACBlockOptions& options)
    : RepBlock("ACBlock", "fused_conv"), options_(options) {
  const auto& o = options_;
  REFOLD_CHECK(o.kernel_size() > 0, "ACBlock: kernel_size ({}) must be positive", o.kernel_size());
  REFOLD_CHECK(o.padding() >= 0, "ACBlock: padding ({}) must be non-negative", o.padding());
  const std::int64_t k = o.kernel_size(), p = o.padding();
  const auto conv = [&](Size2d kernel, Padding2d padding, bool bias) {
    return nn::Conv2dOptions(o.in_channels(), o.out_channels(), kernel)
        .stride(o.stride())
        .padding(padding)
        .dilation(o.dilation())
        .groups(o.groups())
        .bias(bias);
  };
  if (o.deploy()) {
    register_deployed(conv(k, p, true));
    return;
  }
  const auto bn = [&] {
    return std::make_shared<nn::BatchNorm2d>(
        nn::BatchNorm2dOptions(o.out_channels()).affine(o.use_affine()));
  };
  // Aligning the 1×K and K×1 windows with the K×K one (ACNet's Fig. 2): the short axis is padded
  // d·(K/2) less (the reference writes K/2: it assumes dilation 1). Below zero that is a crop of
  // the input, which the reference defines for dilation 1 only.
  const Size2d d = o.dilation();
  const std::int64_t offset_h = p - d.h * (k / 2), offset_w = p - d.w * (k / 2);
  std::int64_t hor_rows = offset_h, ver_cols = offset_w;
  if (offset_h < 0 || offset_w < 0) {
    REFOLD_CHECK(d == Size2d(1),
                 "ACBlock: padding ({}) below dilation * (kernel_size / 2) needs ACNet's crop, "
                 "which is defined for dilation 1 only (got dilation ({}, {}))",
                 p, d.h, d.w);
    crop_ = k / 2 - p;
    hor_rows = ver_cols = 0;
  }
  register_module("square_conv", std::make_shared<nn::Conv2d>(conv(k, p, false)));
  register_module("square_bn", bn());
  register_module("ver_conv", std::make_shared<nn::Conv2d>(conv({k, 1}, {p, ver_cols}, false)));
  register_module("hor_conv", std::make_shared<nn::Conv2d>(conv({1, k}, {hor_rows, p}, false)));
  register_module("ver_bn", bn());
  register_module("hor_bn", bn());
}

std::vector<std::string> ACBlock::branch_names() const {
  return {"square_conv", "square_bn", "ver_conv", "hor_conv", "ver_bn", "hor_bn"};
}

Tensor ACBlock::forward_branches(const Tensor& input) {
  const Tensor square = (*get<nn::Module>("square_bn"))((*get<nn::Module>("square_conv"))(input));
  // The vertical K×1 conv loses `crop` columns on each side, the horizontal 1×K conv `crop` rows
  // (negative F.pad amounts crop).
  const std::int64_t c = crop_;
  const Tensor ver_input = c > 0 ? functional::pad(input, {-c, -c}) : input;
  const Tensor hor_input = c > 0 ? functional::pad(input, {0, 0, -c, -c}) : input;
  const Tensor ver = (*get<nn::Module>("ver_bn"))((*get<nn::Module>("ver_conv"))(ver_input));
  const Tensor hor = (*get<nn::Module>("hor_bn"))((*get<nn::Module>("hor_conv"))(hor_input));
  return functional::add(functional::add(square, ver), hor);
}

//   W = s_sq·W_sq + pad_K(s_v·W_v) + pad_K(s_h·W_h),   b = Σ (0 − μ)·s + β.
ConvKernel ACBlock::fuse_branches() const {
  const auto square = main_conv();
  const auto ver = get<nn::Conv2d>("ver_conv");
  const auto hor = get<nn::Conv2d>("hor_conv");
  check_parallel("ver_conv", *ver, {0, crop_});
  check_parallel("hor_conv", *hor, {crop_, 0});
  const Size2d k = square->options().kernel_size();
  const auto fold = [&](const std::string& bn_name, const nn::Conv2d& conv) {
    return in_branch(bn_name, [&] {
      return pad_kernel_to(
          fold_batch_norm(kernel_of(conv), params_of(*get<nn::BatchNorm2d>(bn_name))), k);
    });
  };
  return in_branch("sum", [&] {
    return sum_branches({fold("square_bn", *square), fold("ver_bn", *ver), fold("hor_bn", *hor)});
  });
}

std::int64_t ACBlock::branch_flops(const Shape& input) const {
  const std::string& what = type_name();
  REFOLD_CHECK(input.size() == 4, "{}: flops: the input shape must be 4-d, got [{}]", what,
               fmt::join(input, ", "));
  const std::int64_t c = crop_;
  const auto square = detail::conv_flops(what, *main_conv(), input);
  const auto ver = detail::conv_flops(what, *get<nn::Conv2d>("ver_conv"),
                                      {input[0], input[1], input[2], input[3] - 2 * c});
  const auto hor = detail::conv_flops(what, *get<nn::Conv2d>("hor_conv"),
                                      {input[0], input[1], input[2] - 2 * c, input[3]});
  return detail::total(what, {square.flops, detail::batch_norm_flops(what, square.output),
                              ver.flops, detail::batch_norm_flops(what, ver.output), hor.flops,
                              detail::batch_norm_flops(what, hor.output),
                              detail::sum_flops(what, square.output, 3)});
}

}  // namespace refold::reparam
