// RepConv (ultralytics); the math and the names are in refold/reparam/rep_conv.h.
#include "refold/reparam/rep_conv.h"

#include <memory>

#include "core/check.h"
#include "refold/functional.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"
#include "refold/nn/batchnorm.h"
#include "refold/reparam/layers.h"
#include "refold/reparam/module_kernels.h"
#include "reparam/flops.h"

namespace refold::reparam {

// ultralytics' order: act, bn, conv1, conv2 (the deployed form: act, conv).
RepConv::RepConv(const RepConvOptions& options) : RepBlock("RepConv", "conv"), options_(options) {
  const auto& o = options_;
  REFOLD_CHECK(o.in_channels() > 0 && o.out_channels() > 0,
               "RepConv: c1 ({}) and c2 ({}) must be positive", o.in_channels(), o.out_channels());
  REFOLD_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      "RepConv: groups ({}) must divide c1 ({}) and c2 ({})", o.groups(), o.in_channels(),
      o.out_channels());
  REFOLD_CHECK(o.kernel_size() > 0 && o.kernel_size() % 2 == 1,
               "RepConv: kernel_size ({}) must be odd (the 1x1 branch and the identity sit at its "
               "centre)",
               o.kernel_size());
  REFOLD_CHECK(o.padding() >= o.kernel_size() / 2,
               "RepConv: padding ({}) must be at least kernel_size / 2 ({}): conv2 is padded by "
               "padding - kernel_size / 2",
               o.padding(), o.kernel_size() / 2);
  const bool identity = o.bn() && o.in_channels() == o.out_channels() && o.stride() == Size2d(1);
  REFOLD_CHECK(!identity || o.padding() == o.kernel_size() / 2,
               "RepConv: padding ({}) must be kernel_size / 2 ({}) when the block has the identity "
               "BN (the sum must keep the input's size)",
               o.padding(), o.kernel_size() / 2);
  register_module("act", o.activation() ? o.activation() : std::make_shared<nn::SiLU>());
  const auto conv = [&](std::int64_t kernel, std::int64_t padding) {
    return nn::Conv2dOptions(o.in_channels(), o.out_channels(), kernel)
        .stride(o.stride())
        .padding(padding)
        .groups(o.groups());
  };
  const std::int64_t k = o.kernel_size(), p = o.padding();
  if (o.deploy()) {
    register_deployed(conv(k, p));
    return;
  }
  if (identity) register_module("bn", std::make_shared<nn::BatchNorm2d>(o.in_channels()));
  // ultralytics' Conv(..., act=False): conv → bn → Identity.
  register_module("conv1", conv_bn(conv(k, p), std::make_shared<nn::Identity>()));
  register_module("conv2", conv_bn(conv(1, p - k / 2), std::make_shared<nn::Identity>()));
}

std::vector<std::string> RepConv::branch_names() const { return {"bn", "conv1", "conv2"}; }

Tensor RepConv::forward_branches(const Tensor& input) {
  Tensor sum =
      functional::add((*get<nn::Module>("conv1"))(input), (*get<nn::Module>("conv2"))(input));
  if (const auto identity = find<nn::Module>("bn")) sum = functional::add(sum, (*identity)(input));
  return forward_deployed(sum);
}

Tensor RepConv::forward_deployed(const Tensor& conv_output) {
  return (*get<nn::Module>("act"))(conv_output);
}

//   W = s_1·W_1 + pad_K(s_2·W_2) + s_id·I_K,   b = Σ (0 − μ)·s + β.
ConvKernel RepConv::fuse_branches() const {
  // A Conv branch whose own act is not an Identity adds a nonlinearity inside the sum: not a conv.
  check_sequence("conv1", {"conv", "bn"});
  check_sequence("conv2", {"conv", "bn"});
  const auto conv1 = main_conv();
  const auto conv2 = get<nn::Conv2d>("conv2.conv");
  check_parallel("conv2.conv", *conv2);
  const Size2d k = conv1->options().kernel_size();
  std::vector<ConvKernel> branches;
  branches.push_back(in_branch("conv1", [&] {
    return fold_batch_norm(kernel_of(*conv1), params_of(*get<nn::BatchNorm2d>("conv1.bn")));
  }));
  branches.push_back(in_branch("conv2", [&] {
    return pad_kernel_to(
        fold_batch_norm(kernel_of(*conv2), params_of(*get<nn::BatchNorm2d>("conv2.bn"))), k);
  }));
  if (const auto identity = find<nn::BatchNorm2d>("bn")) {
    check_identity("bn");
    branches.push_back(in_branch("bn", [&] {
      return identity_with_batch_norm(conv1->options().in_channels(), conv1->options().groups(), k,
                                      params_of(*identity));
    }));
  }
  return in_branch("sum", [&] { return sum_branches(branches); });
}

std::int64_t RepConv::branch_flops(const Shape& input) const {
  const std::string& what = type_name();
  const auto c1 = detail::conv_flops(what, *main_conv(), input);
  const auto c2 = detail::conv_flops(what, *get<nn::Conv2d>("conv2.conv"), input);
  const bool identity = find<nn::Module>("bn") != nullptr;
  return detail::total(what, {c1.flops, detail::batch_norm_flops(what, c1.output), c2.flops,
                              detail::batch_norm_flops(what, c2.output),
                              identity ? detail::batch_norm_flops(what, input) : 0,
                              detail::sum_flops(what, c1.output, identity ? 3 : 2)});
}

}  // namespace refold::reparam
