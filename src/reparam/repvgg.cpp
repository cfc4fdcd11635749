// RepVGGBlock and QARepVGGBlock; the math and the names are in refold/reparam/repvgg.h.
#include "refold/reparam/repvgg.h"

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
namespace {

bool has_identity(const RepVGGBlockOptions& o) {
  return o.in_channels() == o.out_channels() && o.stride() == Size2d(1);
}

void check_options(const std::string& block, const RepVGGBlockOptions& o) {
  REFOLD_CHECK(o.in_channels() > 0 && o.out_channels() > 0,
               "{}: in_channels ({}) and out_channels ({}) must be positive", block,
               o.in_channels(), o.out_channels());
  REFOLD_CHECK(
      o.groups() > 0 && o.in_channels() % o.groups() == 0 && o.out_channels() % o.groups() == 0,
      "{}: groups ({}) must divide in_channels ({}) and out_channels ({})", block, o.groups(),
      o.in_channels(), o.out_channels());
  REFOLD_CHECK(o.kernel_size() > 0 && o.kernel_size() % 2 == 1,
               "{}: kernel_size ({}) must be odd (the 1x1 branch and the identity sit at its "
               "centre)",
               block, o.kernel_size());
  REFOLD_CHECK(o.padding() >= o.kernel_size() / 2,
               "{}: padding ({}) must be at least kernel_size / 2 ({}): the 1x1 branch is padded "
               "by padding - kernel_size / 2",
               block, o.padding(), o.kernel_size() / 2);
  // x ↦ x keeps the size; so must the K×K conv it is added to.
  REFOLD_CHECK(!has_identity(o) || o.padding() == o.kernel_size() / 2,
               "{}: padding ({}) must be kernel_size / 2 ({}) when the block has an identity "
               "branch (in_channels == out_channels, stride 1)",
               block, o.padding(), o.kernel_size() / 2);
}

nn::Conv2dOptions conv_options(const RepVGGBlockOptions& o, std::int64_t kernel,
                               std::int64_t padding) {
  return nn::Conv2dOptions(o.in_channels(), o.out_channels(), kernel)
      .stride(o.stride())
      .padding(padding)
      .groups(o.groups());
}

}  // namespace

// ---- RepVGGBlock -----------------------------------------------------------------------------

RepVGGBlock::RepVGGBlock(const RepVGGBlockOptions& options) : RepVGGBlock("RepVGGBlock", options) {}

// The reference's __init__ order: nonlinearity, se, then rbr_identity, rbr_dense, rbr_1x1 (or
// rbr_reparam), which is the state_dict order.
RepVGGBlock::RepVGGBlock(std::string type_name, const RepVGGBlockOptions& options)
    : RepBlock(std::move(type_name), "rbr_reparam"), options_(options) {
  check_options(this->type_name(), options_);
  register_module("nonlinearity",
                  options_.activation() ? options_.activation() : std::make_shared<nn::ReLU>());
  register_module("se", std::make_shared<nn::Identity>());
  const std::int64_t k = options_.kernel_size(), p = options_.padding();
  if (options_.deploy()) {
    register_deployed(conv_options(options_, k, p));
    return;
  }
  if (has_identity(options_))
    register_module("rbr_identity", std::make_shared<nn::BatchNorm2d>(options_.in_channels()));
  register_module("rbr_dense", conv_bn(conv_options(options_, k, p)));
  register_module("rbr_1x1", conv_bn(conv_options(options_, 1, p - k / 2)));
}

std::vector<std::string> RepVGGBlock::branch_names() const {
  return {"rbr_identity", "rbr_dense", "rbr_1x1"};
}

Tensor RepVGGBlock::activate(const Tensor& x) {
  return (*get<nn::Module>("nonlinearity"))((*get<nn::Module>("se"))(x));
}

Tensor RepVGGBlock::forward_branches(const Tensor& input) {
  Tensor sum =
      functional::add((*get<nn::Module>("rbr_dense"))(input), (*get<nn::Module>("rbr_1x1"))(input));
  if (const auto identity = find<nn::Module>("rbr_identity"))
    sum = functional::add(sum, (*identity)(input));
  return activate(sum);
}

Tensor RepVGGBlock::forward_deployed(const Tensor& conv_output) { return activate(conv_output); }

//   W = s_d·W_d + pad_K(s_1·W_1) + s_id·I_K,   b = Σ (0 − μ)·s + β   over the three branches.
ConvKernel RepVGGBlock::fuse_branches() const {
  check_sequence("rbr_dense", {"conv", "bn"});
  check_sequence("rbr_1x1", {"conv", "bn"});
  const auto dense = main_conv();
  const auto pointwise = get<nn::Conv2d>("rbr_1x1.conv");
  check_parallel("rbr_1x1.conv", *pointwise);
  const Size2d k = dense->options().kernel_size();
  std::vector<ConvKernel> branches;
  branches.push_back(in_branch("rbr_dense", [&] {
    return fold_batch_norm(kernel_of(*dense), params_of(*get<nn::BatchNorm2d>("rbr_dense.bn")));
  }));
  branches.push_back(in_branch("rbr_1x1", [&] {
    return pad_kernel_to(
        fold_batch_norm(kernel_of(*pointwise), params_of(*get<nn::BatchNorm2d>("rbr_1x1.bn"))), k);
  }));
  if (const auto identity = find<nn::BatchNorm2d>("rbr_identity")) {
    check_identity("rbr_identity");
    branches.push_back(in_branch("rbr_identity", [&] {
      return identity_with_batch_norm(dense->options().in_channels(), dense->options().groups(), k,
                                      params_of(*identity));
    }));
  }
  return in_branch("sum", [&] { return sum_branches(branches); });
}

std::int64_t RepVGGBlock::branch_flops(const Shape& input) const {
  const std::string& what = type_name();
  const auto dense = detail::conv_flops(what, *main_conv(), input);
  const auto pointwise = detail::conv_flops(what, *get<nn::Conv2d>("rbr_1x1.conv"), input);
  const bool identity = find<nn::Module>("rbr_identity") != nullptr;
  return detail::total(what, {dense.flops, detail::batch_norm_flops(what, dense.output),
                              pointwise.flops, detail::batch_norm_flops(what, pointwise.output),
                              identity ? detail::batch_norm_flops(what, input) : 0,
                              detail::sum_flops(what, dense.output, identity ? 3 : 2)});
}

// ---- QARepVGGBlock ---------------------------------------------------------------------------

// YOLOv6 builds a RepVGGBlock, then reassigns rbr_identity and rbr_1x1 (which keeps their place
// among the children) and adds bn.
QARepVGGBlock::QARepVGGBlock(const RepVGGBlockOptions& options)
    : RepVGGBlock("QARepVGGBlock", options) {
  if (options.deploy()) return;
  if (child("rbr_identity")) replace_child("rbr_identity", std::make_shared<nn::Identity>());
  replace_child("rbr_1x1", std::make_shared<nn::Conv2d>(
                               nn::Conv2dOptions(options.in_channels(), options.out_channels(), 1)
                                   .stride(options.stride())
                                   .padding(options.padding() - options.kernel_size() / 2)
                                   .groups(options.groups())
                                   .bias(false)));
  register_module("bn", std::make_shared<nn::BatchNorm2d>(options.out_channels()));
}

std::vector<std::string> QARepVGGBlock::branch_names() const {
  return {"rbr_identity", "rbr_dense", "rbr_1x1", "bn"};
}

Tensor QARepVGGBlock::forward_branches(const Tensor& input) {
  Tensor sum =
      functional::add((*get<nn::Module>("rbr_dense"))(input), (*get<nn::Conv2d>("rbr_1x1"))(input));
  if (const auto identity = find<nn::Identity>("rbr_identity"))
    sum = functional::add(sum, (*identity)(input));
  // nonlinearity(bn(se(sum))): the BN comes after se, inside the nonlinearity.
  const Tensor normalized = (*get<nn::BatchNorm2d>("bn"))((*get<nn::Module>("se"))(sum));
  return (*get<nn::Module>("nonlinearity"))(normalized);
}

//   W = s·(s_d·W_d + pad_K(W_1) + I_K),   b = (b_d − μ)·s + β,   (s, μ, β) of the BN after the sum.
ConvKernel QARepVGGBlock::fuse_branches() const {
  check_sequence("rbr_dense", {"conv", "bn"});
  const auto dense = main_conv();
  const auto pointwise = get<nn::Conv2d>("rbr_1x1");
  check_parallel("rbr_1x1", *pointwise);
  const Size2d k = dense->options().kernel_size();
  std::vector<ConvKernel> branches;
  branches.push_back(in_branch("rbr_dense", [&] {
    return fold_batch_norm(kernel_of(*dense), params_of(*get<nn::BatchNorm2d>("rbr_dense.bn")));
  }));
  branches.push_back(in_branch("rbr_1x1", [&] { return pad_kernel_to(kernel_of(*pointwise), k); }));
  if (find<nn::Identity>("rbr_identity")) {
    check_identity("rbr_identity");
    branches.push_back(in_branch("rbr_identity", [&] {
      return identity_kernel(dense->options().in_channels(), dense->options().groups(), k,
                             dense->weight().dtype());
    }));
  }
  return in_branch("bn", [&] {
    return fold_batch_norm(sum_branches(branches), params_of(*get<nn::BatchNorm2d>("bn")));
  });
}

std::int64_t QARepVGGBlock::branch_flops(const Shape& input) const {
  const std::string& what = type_name();
  const auto dense = detail::conv_flops(what, *main_conv(), input);
  const auto pointwise = detail::conv_flops(what, *get<nn::Conv2d>("rbr_1x1"), input);
  const bool identity = find<nn::Module>("rbr_identity") != nullptr;
  return detail::total(what,
                       {dense.flops, detail::batch_norm_flops(what, dense.output), pointwise.flops,
                        detail::sum_flops(what, dense.output, identity ? 3 : 2),
                        detail::batch_norm_flops(what, dense.output)});
}

}  // namespace refold::reparam
