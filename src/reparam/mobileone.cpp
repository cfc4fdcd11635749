// MobileOneBlock; the math and the names are in refold/reparam/mobileone.h.
#include "refold/reparam/mobileone.h"

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

MobileOneBlock::MobileOneBlock(const MobileOneBlockOptions& options)
    : RepBlock("MobileOneBlock", "reparam_conv"), options_(options) {
  const auto& o = options_;
  REFOLD_CHECK(o.in_channels() > 0 && o.out_channels() > 0,
               "MobileOneBlock: in_channels ({}) and out_channels ({}) must be positive",
               o.in_channels(), o.out_channels());
  REFOLD_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      "MobileOneBlock: groups ({}) must divide in_channels ({}) and out_channels ({})", o.groups(),
      o.in_channels(), o.out_channels());
  REFOLD_CHECK(o.kernel_size() > 0, "MobileOneBlock: kernel_size ({}) must be positive",
               o.kernel_size());
  REFOLD_CHECK(o.num_conv_branches() >= 1,
               "MobileOneBlock: num_conv_branches ({}) must be at least 1 (the fused conv takes "
               "the geometry of rbr_conv.0)",
               o.num_conv_branches());
  const bool skip = o.in_channels() == o.out_channels() && o.stride() == Size2d(1);
  // The 1×1 scale branch (padding 0) and the skip (x itself) must line up with the K×K
  // branches: that takes padding K/2.
  REFOLD_CHECK((o.kernel_size() == 1 && !skip) || o.padding() == o.kernel_size() / 2,
               "MobileOneBlock: padding ({}) must be kernel_size / 2 ({}) for the scale and skip "
               "branches to line up with the conv branches",
               o.padding(), o.kernel_size() / 2);
  register_module("se", std::make_shared<nn::Identity>());
  register_module("activation", o.activation() ? o.activation() : std::make_shared<nn::ReLU>());
  const auto conv = [&](std::int64_t kernel, std::int64_t padding) {
    return nn::Conv2dOptions(o.in_channels(), o.out_channels(), kernel)
        .stride(o.stride())
        .padding(padding)
        .groups(o.groups());
  };
  if (o.deploy()) {
    register_deployed(conv(o.kernel_size(), o.padding()));
    return;
  }
  if (skip) register_module("rbr_skip", std::make_shared<nn::BatchNorm2d>(o.in_channels()));
  auto branches = std::make_shared<ModuleList>();
  for (std::int64_t i = 0; i < o.num_conv_branches(); ++i)
    branches->push_back(conv_bn(conv(o.kernel_size(), o.padding())));
  register_module("rbr_conv", branches);
  if (o.kernel_size() > 1) register_module("rbr_scale", conv_bn(conv(1, 0)));
}

std::vector<std::string> MobileOneBlock::branch_names() const {
  return {"rbr_skip", "rbr_conv", "rbr_scale"};
}

std::vector<std::string> MobileOneBlock::conv_branch_paths() const {
  std::vector<std::string> paths;
  for (const auto& [name, module] : get<ModuleList>("rbr_conv")->named_children())
    paths.push_back("rbr_conv." + name);
  return paths;
}

Tensor MobileOneBlock::forward_branches(const Tensor& input) {
  // The reference's order: (scale + skip), then each conv branch added in turn.
  Tensor out;
  const auto accumulate = [&](const Tensor& t) {
    out = out.defined() ? functional::add(out, t) : t;
  };
  if (const auto scale = find<nn::Module>("rbr_scale")) accumulate((*scale)(input));
  if (const auto skip = find<nn::Module>("rbr_skip")) accumulate((*skip)(input));
  for (const std::string& path : conv_branch_paths()) accumulate((*get<nn::Module>(path))(input));
  return forward_deployed(out);
}

Tensor MobileOneBlock::forward_deployed(const Tensor& conv_output) {
  return (*get<nn::Module>("activation"))((*get<nn::Module>("se"))(conv_output));
}

//   W = Σ_i s_i·W_i + pad_K(s_scale·W_scale) + s_skip·I_K,   b = Σ (0 − μ)·s + β.
ConvKernel MobileOneBlock::fuse_branches() const {
  const auto main = main_conv();
  const Size2d k = main->options().kernel_size();
  std::vector<ConvKernel> branches;
  for (const std::string& path : conv_branch_paths()) {
    check_sequence(path, {"conv", "bn"});
    const auto conv = get<nn::Conv2d>(path + ".conv");
    check_parallel(path + ".conv", *conv);
    branches.push_back(in_branch(path, [&] {
      return pad_kernel_to(
          fold_batch_norm(kernel_of(*conv), params_of(*get<nn::BatchNorm2d>(path + ".bn"))), k);
    }));
  }
  if (find<nn::Module>("rbr_scale")) {
    check_sequence("rbr_scale", {"conv", "bn"});
    const auto scale = get<nn::Conv2d>("rbr_scale.conv");
    check_parallel("rbr_scale.conv", *scale);
    branches.push_back(in_branch("rbr_scale", [&] {
      return pad_kernel_to(
          fold_batch_norm(kernel_of(*scale), params_of(*get<nn::BatchNorm2d>("rbr_scale.bn"))), k);
    }));
  }
  if (const auto skip = find<nn::BatchNorm2d>("rbr_skip")) {
    check_identity("rbr_skip");
    branches.push_back(in_branch("rbr_skip", [&] {
      return identity_with_batch_norm(main->options().in_channels(), main->options().groups(), k,
                                      params_of(*skip));
    }));
  }
  return in_branch("sum", [&] { return sum_branches(branches); });
}

std::int64_t MobileOneBlock::branch_flops(const Shape& input) const {
  const std::string& what = type_name();
  std::int64_t flops = 0, terms = 0;
  Shape output;
  const auto add_conv_bn = [&](const nn::Conv2d& conv) {
    const auto c = detail::conv_flops(what, conv, input);
    flops = detail::total(what, {flops, c.flops, detail::batch_norm_flops(what, c.output)});
    output = c.output;
    ++terms;
  };
  for (const std::string& path : conv_branch_paths()) add_conv_bn(*get<nn::Conv2d>(path + ".conv"));
  if (const auto scale = find<nn::Conv2d>("rbr_scale.conv")) add_conv_bn(*scale);
  if (find<nn::Module>("rbr_skip")) {
    flops = detail::total(what, {flops, detail::batch_norm_flops(what, input)});
    ++terms;
  }
  return detail::total(what, {flops, detail::sum_flops(what, output, terms)});
}

}  // namespace refold::reparam
