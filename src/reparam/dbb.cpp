// DiverseBranchBlock; the math and the names are in refold/reparam/dbb.h.
#include "refold/reparam/dbb.h"

#include <memory>

#include "core/check.h"
#include "refold/functional.h"
#include "refold/nn/basic.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/pooling.h"
#include "refold/reparam/layers.h"
#include "refold/reparam/module_kernels.h"
#include "reparam/flops.h"

namespace refold::reparam {
namespace {

std::string pads_text(const Padding2d& padding, Size2d kernel, Size2d dilation) {
  const Pads2d p = padding.resolve(kernel, dilation);
  return fmt::format("(top {}, left {}, bottom {}, right {})", p.top, p.left, p.bottom, p.right);
}

}  // namespace

DiverseBranchBlock::DiverseBranchBlock(const DiverseBranchBlockOptions& options)
    : RepBlock("DiverseBranchBlock", "dbb_reparam"), options_(options) {
  const auto& o = options_;
  const std::int64_t in = o.in_channels(), out = o.out_channels(), k = o.kernel_size(),
                     p = o.padding(), g = o.groups(), internal = o.internal_channels_1x1_3x3();
  REFOLD_CHECK(in > 0 && out > 0 && internal > 0,
               "DiverseBranchBlock: in_channels ({}), out_channels ({}) and "
               "internal_channels_1x1_3x3 ({}) must be positive",
               in, out, internal);
  REFOLD_CHECK(g > 0 && in % g == 0 && out % g == 0 && internal % g == 0,
               "DiverseBranchBlock: groups ({}) must divide in_channels ({}), out_channels ({}) "
               "and internal_channels_1x1_3x3 ({})",
               g, in, out, internal);
  REFOLD_CHECK(k > 0 && k % 2 == 1,
               "DiverseBranchBlock: kernel_size ({}) must be odd (the 1x1 branch sits at its "
               "centre)",
               k);
  REFOLD_CHECK(p == k / 2, "DiverseBranchBlock: padding ({}) must be kernel_size / 2 ({})", p,
               k / 2);
  register_module("nonlinear", o.nonlinear() ? o.nonlinear() : std::make_shared<nn::Identity>());
  const auto conv = [&](std::int64_t cin, std::int64_t cout, std::int64_t kernel) {
    return nn::Conv2dOptions(cin, cout, kernel).groups(g).bias(false);
  };
  if (o.deploy()) {
    register_deployed(conv(in, out, k).stride(o.stride()).padding(p));
    return;
  }
  register_module("dbb_origin", conv_bn(conv(in, out, k).stride(o.stride()).padding(p)));

  auto avg = std::make_shared<NamedSequential>();
  if (g < out) {
    avg->add("conv", std::make_shared<nn::Conv2d>(conv(in, out, 1)));
    avg->add("bn", std::make_shared<BNAndPad>(p, out));
    avg->add("avg", std::make_shared<nn::AvgPool2d>(nn::AvgPool2dOptions(k).stride(o.stride())));
  } else {
    avg->add("avg", std::make_shared<nn::AvgPool2d>(
                        nn::AvgPool2dOptions(k).stride(o.stride()).padding(p)));
  }
  avg->add("avgbn", std::make_shared<nn::BatchNorm2d>(out));
  register_module("dbb_avg", avg);
  if (g < out) register_module("dbb_1x1", conv_bn(conv(in, out, 1).stride(o.stride())));

  auto kxk = std::make_shared<NamedSequential>();
  if (internal == in)
    kxk->add("idconv1", std::make_shared<IdentityBasedConv1x1>(in, g));
  else
    kxk->add("conv1", std::make_shared<nn::Conv2d>(conv(in, internal, 1)));
  kxk->add("bn1", std::make_shared<BNAndPad>(p, internal));
  kxk->add("conv2", std::make_shared<nn::Conv2d>(conv(internal, out, k).stride(o.stride())));
  kxk->add("bn2", std::make_shared<nn::BatchNorm2d>(out));
  register_module("dbb_1x1_kxk", kxk);
}

std::vector<std::string> DiverseBranchBlock::branch_names() const {
  return {"dbb_origin", "dbb_avg", "dbb_1x1", "dbb_1x1_kxk"};
}

Tensor DiverseBranchBlock::forward_branches(const Tensor& input) {
  // The reference's order: out = origin; out += 1×1; out += avg; out += 1×1 → K×K.
  Tensor out = (*get<nn::Module>("dbb_origin"))(input);
  if (const auto pointwise = find<nn::Module>("dbb_1x1"))
    out = functional::add(out, (*pointwise)(input));
  out = functional::add(out, (*get<nn::Module>("dbb_avg"))(input));
  out = functional::add(out, (*get<nn::Module>("dbb_1x1_kxk"))(input));
  return (*get<nn::Module>("nonlinear"))(out);
}

Tensor DiverseBranchBlock::forward_deployed(const Tensor& conv_output) {
  return (*get<nn::Module>("nonlinear"))(conv_output);
}

void DiverseBranchBlock::check_first_1x1(const std::string& name, const nn::Conv2d& conv) const {
  const nn::Conv2dOptions& c = conv.options();
  const Pads2d p = c.padding().resolve(c.kernel_size(), c.dilation());
  REFOLD_CHECK(c.kernel_size() == Size2d(1) && c.stride() == Size2d(1) && p == Pads2d{},
               "{}: branch mismatch: {} must be a 1x1 conv with stride 1 and no padding, got {}x{} "
               "with stride ({}, {}) and padding {}",
               type_name(), name, c.kernel_size().h, c.kernel_size().w, c.stride().h, c.stride().w,
               pads_text(c.padding(), c.kernel_size(), c.dilation()));
  const nn::Conv2dOptions& m = main_conv()->options();
  REFOLD_CHECK(c.in_channels() == m.in_channels() && c.groups() == m.groups(),
               "{}: branch mismatch: {} has in_channels {} and groups {} but {} has {} and {}",
               type_name(), name, c.in_channels(), c.groups(), main_conv_path(), m.in_channels(),
               m.groups());
}

// conv1 (or W_id + I) → BNAndPad(P) → conv2 (padding 0) → bn2 is, by merge_sequential_1x1_kxk,
// one K×K conv with conv2's stride and padding P on the zero-padded input.
ConvKernel DiverseBranchBlock::fuse_1x1_kxk() const {
  const std::string seq = "dbb_1x1_kxk";
  const bool identity_based = get<NamedSequential>(seq)->child("idconv1") != nullptr;
  const std::string first_name = identity_based ? "idconv1" : "conv1";
  check_sequence(seq, {first_name, "bn1", "conv2", "bn2"});
  const std::string first_path = seq + "." + first_name;
  ConvKernel first;
  if (identity_based) {
    const auto idconv = get<IdentityBasedConv1x1>(first_path);
    check_first_1x1(first_path, *idconv);
    first = in_branch(first_path, [&] { return idconv->actual_kernel(); });
  } else {
    const auto conv1 = get<nn::Conv2d>(first_path);
    check_first_1x1(first_path, *conv1);
    first = kernel_of(*conv1);
  }
  const auto bn1 = get<BNAndPad>(seq + ".bn1");
  const auto conv2 = get<nn::Conv2d>(seq + ".conv2");
  const nn::Conv2dOptions& c2 = conv2->options();
  REFOLD_CHECK(c2.padding().resolve(c2.kernel_size(), c2.dilation()) == Pads2d{},
               "{}: branch mismatch: {}.conv2 must have padding 0 (its border comes from bn1's "
               "pad), got {}",
               type_name(), seq, pads_text(c2.padding(), c2.kernel_size(), c2.dilation()));
  check_like_main(seq + ".conv2", *conv2, /*compare_in_channels=*/false);
  check_window(seq, c2.kernel_size(), bn1->pad_pixels(), c2.dilation());
  const Size2d k = main_conv()->options().kernel_size();
  return in_branch(seq, [&] {
    const ConvKernel merged = merge_sequential_1x1_kxk(
        fold_batch_norm(first, params_of(*bn1->bn())),
        fold_batch_norm(kernel_of(*conv2), params_of(*get<nn::BatchNorm2d>(seq + ".bn2"))));
    return pad_kernel_to(merged, k);
  });
}

// With a 1×1 conv: conv → BNAndPad(P) → avg(K, padding 0) → avgbn is merge(fold(conv, bn),
// fold(avg_K, avgbn)), the average pool being the conv W[o, o mod (C/g)] = 1/K².
// Without: avg(K, padding P) → avgbn is fold(avg_K, avgbn) on x itself (zero padding, counted).
ConvKernel DiverseBranchBlock::fuse_avg() const {
  const std::string seq = "dbb_avg";
  const bool has_conv = get<NamedSequential>(seq)->child("conv") != nullptr;
  check_sequence(seq, has_conv ? std::vector<std::string>{"conv", "bn", "avg", "avgbn"}
                               : std::vector<std::string>{"avg", "avgbn"});
  const auto pool = get<nn::AvgPool2d>(seq + ".avg");
  const auto avgbn = get<nn::BatchNorm2d>(seq + ".avgbn");
  const nn::AvgPool2dOptions& a = pool->options();
  REFOLD_CHECK(!a.ceil_mode() && !a.divisor_override() &&
                   (a.count_include_pad() || a.padding() == Size2d(0)),
               "{}: {}.avg is not a convolution: it needs ceil_mode false, no divisor_override "
               "and count_include_pad true (got ceil_mode {}, divisor_override {}, "
               "count_include_pad {})",
               type_name(), seq, a.ceil_mode(), a.divisor_override().has_value(),
               a.count_include_pad());
  const auto main = main_conv();
  const nn::Conv2dOptions& m = main->options();
  REFOLD_CHECK(a.stride() == m.stride(),
               "{}: branch mismatch: {}.avg has stride ({}, {}) but {} has ({}, {})", type_name(),
               seq, a.stride().h, a.stride().w, main_conv_path(), m.stride().h, m.stride().w);
  const DType dtype = main->weight().dtype();
  ConvKernel kernel;
  if (has_conv) {
    const auto conv = get<nn::Conv2d>(seq + ".conv");
    check_first_1x1(seq + ".conv", *conv);
    REFOLD_CHECK(conv->options().out_channels() == m.out_channels(),
                 "{}: branch mismatch: {}.conv has out_channels {} but {} has {}", type_name(), seq,
                 conv->options().out_channels(), main_conv_path(), m.out_channels());
    const auto bn = get<BNAndPad>(seq + ".bn");
    REFOLD_CHECK(a.padding() == Size2d(0),
                 "{}: branch mismatch: {}.avg must have padding 0 after the BNAndPad layer, got "
                 "({}, {})",
                 type_name(), seq, a.padding().h, a.padding().w);
    check_window(seq, a.kernel_size(), bn->pad_pixels(), Size2d(1));
    kernel = in_branch(seq, [&] {
      return merge_sequential_1x1_kxk(
          fold_batch_norm(kernel_of(*conv), params_of(*bn->bn())),
          fold_batch_norm(avg_pool_kernel(m.out_channels(), m.groups(), a.kernel_size(), dtype),
                          params_of(*avgbn)));
    });
  } else {
    REFOLD_CHECK(m.in_channels() == m.out_channels(),
                 "{}: {} without a 1x1 conv averages the input itself, which needs in_channels == "
                 "out_channels, the block has {} and {}",
                 type_name(), seq, m.in_channels(), m.out_channels());
    check_window(seq + ".avg", a.kernel_size(), Padding2d(a.padding()), Size2d(1));
    kernel = in_branch(seq, [&] {
      return fold_batch_norm(avg_pool_kernel(m.in_channels(), m.groups(), a.kernel_size(), dtype),
                             params_of(*avgbn));
    });
  }
  return in_branch(seq, [&] { return pad_kernel_to(kernel, m.kernel_size()); });
}

ConvKernel DiverseBranchBlock::fuse_branches() const {
  check_sequence("dbb_origin", {"conv", "bn"});
  const auto origin = main_conv();
  const Size2d k = origin->options().kernel_size();
  std::vector<ConvKernel> branches;
  branches.push_back(in_branch("dbb_origin", [&] {
    return fold_batch_norm(kernel_of(*origin), params_of(*get<nn::BatchNorm2d>("dbb_origin.bn")));
  }));
  if (find<nn::Module>("dbb_1x1")) {
    check_sequence("dbb_1x1", {"conv", "bn"});
    const auto pointwise = get<nn::Conv2d>("dbb_1x1.conv");
    check_parallel("dbb_1x1.conv", *pointwise);
    branches.push_back(in_branch("dbb_1x1", [&] {
      return pad_kernel_to(
          fold_batch_norm(kernel_of(*pointwise), params_of(*get<nn::BatchNorm2d>("dbb_1x1.bn"))),
          k);
    }));
  }
  branches.push_back(fuse_1x1_kxk());
  branches.push_back(fuse_avg());
  return in_branch("sum", [&] { return sum_branches(branches); });
}

std::int64_t DiverseBranchBlock::branch_flops(const Shape& input) const {
  const std::string& what = type_name();
  using detail::batch_norm_flops;
  using detail::conv_flops;
  const auto origin = conv_flops(what, *main_conv(), input);
  std::int64_t flops = detail::total(what, {origin.flops, batch_norm_flops(what, origin.output)});
  std::int64_t terms = 3;
  if (const auto pointwise = find<nn::Conv2d>("dbb_1x1.conv")) {
    const auto c = conv_flops(what, *pointwise, input);
    flops = detail::total(what, {flops, c.flops, batch_norm_flops(what, c.output)});
    ++terms;
  }
  // dbb_avg: [conv → BN → pad] → avg → avgbn
  const auto pool = get<nn::AvgPool2d>("dbb_avg.avg");
  Shape pool_input = input;
  if (const auto conv = find<nn::Conv2d>("dbb_avg.conv")) {
    const auto c = conv_flops(what, *conv, input);
    flops = detail::total(what, {flops, c.flops, batch_norm_flops(what, c.output)});
    pool_input = detail::padded(c.output, get<BNAndPad>("dbb_avg.bn")->pad_pixels());
  }
  const auto avg = detail::avg_pool_flops(what, *pool, pool_input);
  flops = detail::total(what, {flops, avg.flops, batch_norm_flops(what, avg.output)});
  // dbb_1x1_kxk: first 1×1 → BN → pad → conv2 → bn2
  const auto first = find<nn::Conv2d>("dbb_1x1_kxk.idconv1")
                         ? get<nn::Conv2d>("dbb_1x1_kxk.idconv1")
                         : get<nn::Conv2d>("dbb_1x1_kxk.conv1");
  const auto c1 = conv_flops(what, *first, input);
  const auto c2 =
      conv_flops(what, *get<nn::Conv2d>("dbb_1x1_kxk.conv2"),
                 detail::padded(c1.output, get<BNAndPad>("dbb_1x1_kxk.bn1")->pad_pixels()));
  return detail::total(
      what, {flops, c1.flops, batch_norm_flops(what, c1.output), c2.flops,
             batch_norm_flops(what, c2.output), detail::sum_flops(what, origin.output, terms)});
}

}  // namespace refold::reparam
