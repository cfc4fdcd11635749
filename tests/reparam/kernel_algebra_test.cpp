// The kernel algebra, each function checked numerically against the unfused computation run
// with the reference kernels, on random inputs with BatchNorm statistics randomized (as
// RepVGG's own check does: a fresh BN would be the identity and hide a wrong fold).
// Tolerance: testing::model_close (docs/testing.md: re-parameterized vs original).
#include "refold/reparam/kernel_algebra.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "refold/reference.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold {
namespace {

using reparam::BatchNormParams;
using reparam::ConvKernel;
using reparam::ConvTransposeKernel;
using testing::Tolerance;

// ---- random parameters ---------------------------------------------------------------------

Tensor uniform(const Shape& sizes, double lo, double hi, Generator& gen,
               DType dtype = DType::Float32) {
  const std::vector<float> u = rand(sizes, {}, gen).to_vector();
  std::vector<float> v(u.size());
  for (std::size_t i = 0; i < u.size(); ++i) v[i] = static_cast<float>(lo + (hi - lo) * u[i]);
  return from_values(v, sizes, {dtype});
}

// Weight [out, in/groups, kh, kw] and (optionally) bias [out], uniform in ±1/√fan_in like
// PyTorch's default init, so outputs stay O(1) and the tolerance means the same everywhere.
ConvKernel random_conv(std::int64_t out, std::int64_t in, std::int64_t groups, Size2d k, bool bias,
                       Generator& gen) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(in / groups * k.h * k.w));
  return {uniform({out, in / groups, k.h, k.w}, -bound, bound, gen),
          bias ? uniform({out}, -bound, bound, gen) : Tensor{}, groups};
}

// Running statistics far from the identity: mean in (−1, 1), var in (0.5, 2), γ in (0.5, 1.5)
// with random sign, β in (−1, 1).
BatchNormParams random_bn(std::int64_t channels, Generator& gen) {
  Tensor gamma = uniform({channels}, 0.5, 1.5, gen);
  for (std::int64_t c = 0; c < channels; ++c)
    if (gen.uniform() < 0.5) gamma.set({c}, -gamma.at({c}));
  return {gamma, uniform({channels}, -1, 1, gen), uniform({channels}, -1, 1, gen),
          uniform({channels}, 0.5, 2.0, gen), 1e-5};
}

// ---- the unfused computation, with the reference kernels -----------------------------------

Conv2dOptions conv_options(Padding2d padding, std::int64_t groups, Size2d stride = 1) {
  Conv2dOptions o;
  o.stride = stride;
  o.padding = padding;
  o.groups = groups;
  return o;
}

Tensor conv(const Tensor& x, const ConvKernel& k, Padding2d padding, Size2d stride = 1) {
  return reference::conv2d(x, k.weight, k.bias, conv_options(padding, k.groups, stride));
}

Tensor bn(const Tensor& y, const BatchNormParams& p) {
  return reference::batch_norm(y, p.running_mean, p.running_var, p.weight, p.bias, p.eps);
}

Tensor sum(const std::vector<Tensor>& terms) {
  Tensor total = terms.front();
  for (std::size_t i = 1; i < terms.size(); ++i) total = reference::add(total, terms[i]);
  return total;
}

// F.pad(y, [p, p, p, p], value=values[c]) for each channel c: reference::pad takes one value
// per tensor, DBB's BNAndPad pads every channel with its own, so build it element by element.
Tensor pad_per_channel(const Tensor& y, std::int64_t p, const Tensor& values) {
  const std::int64_t n = y.size(0), c = y.size(1), h = y.size(2), w = y.size(3);
  Tensor out = empty({n, c, h + 2 * p, w + 2 * p});
  for (std::int64_t in = 0; in < n; ++in)
    for (std::int64_t ic = 0; ic < c; ++ic)
      for (std::int64_t i = 0; i < h + 2 * p; ++i)
        for (std::int64_t j = 0; j < w + 2 * p; ++j) {
          const bool inside = i >= p && i < h + p && j >= p && j < w + p;
          out.set({in, ic, i, j}, inside ? y.at({in, ic, i - p, j - p}) : values.at({ic}));
        }
  return out;
}

// y[.., c, ..] · scale[c] + shift[c] along `axis` (1 or `channels` values each), elementwise.
Tensor affine_along(const Tensor& y, const reparam::ChannelAffine& a, std::int64_t axis) {
  std::int64_t inner = 1;
  for (std::int64_t d = axis + 1; d < y.dim(); ++d) inner *= y.size(d);
  const std::int64_t channels = y.size(axis);
  std::vector<float> v = y.contiguous().to_vector();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto c = static_cast<std::size_t>(static_cast<std::int64_t>(i) / inner % channels);
    const double s = a.scale[a.scale.size() == 1 ? 0 : c], t = a.shift[a.shift.size() == 1 ? 0 : c];
    v[i] = static_cast<float>(v[i] * s + t);
  }
  return from_values(v, y.sizes());
}

reparam::ChannelAffine random_affine(std::int64_t channels, Generator& gen) {
  const std::vector<float> s = uniform({channels}, -1.5, 1.5, gen).to_vector();
  const std::vector<float> t = uniform({channels}, -1, 1, gen).to_vector();
  return {{s.begin(), s.end()}, {t.begin(), t.end()}};
}

// ---- the seed ------------------------------------------------------------------------------

// Seed 004 exactly: 2 channels, 9×9 all-ones input, conv3x3 (padding "same") + conv1x1 + x,
// no BatchNorm, equals one 3×3 conv whose kernel is the 3×3 one + the 1×1 one padded to 3×3 +
// the identity kernel (stars on the diagonal), biases added.
TEST(KernelAlgebra, SeedExampleAllOnes) {
  Generator gen(4);
  const std::int64_t c = 2;
  const ConvKernel conv3 = random_conv(c, c, 1, 3, true, gen);
  const ConvKernel conv1 = random_conv(c, c, 1, 1, true, gen);
  for (const Tensor& x : {ones({1, c, 9, 9}), randn({1, c, 9, 9}, {}, gen)}) {
    const Tensor result1 = sum({conv(x, conv3, Padding2d::same()), conv(x, conv1, 0), x});

    EXPECT_NO_THROW(reparam::check_branch_alignment(1, 0, 3, Padding2d::same()));
    const ConvKernel fused = reparam::sum_branches(
        {conv3, reparam::pad_kernel_to(conv1, 3), reparam::identity_kernel(c, 1, 3)});
    const Tensor result3 = conv(x, fused, Padding2d::same());
    EXPECT_TRUE(testing::model_close(result3, result1));
  }
}

// ---- BatchNorm folding ---------------------------------------------------------------------

TEST(KernelAlgebra, FoldBatchNormMatchesConvThenBatchNorm) {
  Generator gen(1);
  for (std::int64_t groups : {1, 2})
    for (bool bias : {false, true})
      for (std::int64_t stride : {1, 2}) {
        SCOPED_TRACE(::testing::Message()
                     << "groups " << groups << " bias " << bias << " stride " << stride);
        const ConvKernel k = random_conv(6, 4, groups, 3, bias, gen);
        const BatchNormParams p = random_bn(6, gen);
        const Tensor x = randn({2, 4, 7, 8}, {}, gen);
        const ConvKernel folded = reparam::fold_batch_norm(k, p);
        EXPECT_EQ(folded.groups, groups);
        ASSERT_TRUE(folded.bias.defined());
        EXPECT_TRUE(testing::model_close(conv(x, folded, 1, stride), bn(conv(x, k, 1, stride), p)));
      }
}

TEST(KernelAlgebra, FoldBatchNormAffineFalse) {
  Generator gen(2);
  const ConvKernel k = random_conv(3, 3, 1, 3, true, gen);
  BatchNormParams p = random_bn(3, gen);
  p.weight = Tensor{};
  p.bias = Tensor{};
  p.eps = 0.1;
  const Tensor x = randn({1, 3, 5, 5}, {}, gen);
  EXPECT_TRUE(
      testing::model_close(conv(x, reparam::fold_batch_norm(k, p), 1), bn(conv(x, k, 1), p)));
}

TEST(KernelAlgebra, FoldBatchNormReadsAnyLayoutAndKeepsInputs) {
  Generator gen(3);
  const ConvKernel k = random_conv(4, 4, 1, 3, true, gen);
  const BatchNormParams p = random_bn(4, gen);
  const std::vector<float> before = k.weight.to_vector();
  const ConvKernel a = reparam::fold_batch_norm(k, p);
  const ConvKernel cl{k.weight.contiguous(MemoryFormat::ChannelsLast), k.bias, 1};
  const ConvKernel b = reparam::fold_batch_norm(cl, p);
  // Same arithmetic on the same values: identical, whatever the strides.
  EXPECT_TRUE(testing::all_close(b.weight, a.weight, Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(b.bias, a.bias, Tolerance::exact()));
  EXPECT_EQ(k.weight.to_vector(), before);
  EXPECT_FALSE(a.weight.shares_storage(k.weight));
}

TEST(KernelAlgebra, FoldBatchNormBFloat16) {
  Generator gen(5);
  const ConvKernel k32 = random_conv(4, 4, 2, 3, true, gen);
  const BatchNormParams p32 = random_bn(4, gen);
  const auto to_bf16 = [](const Tensor& t) { return t.to(DType::BFloat16); };
  const ConvKernel k16{to_bf16(k32.weight), to_bf16(k32.bias), 2};
  const BatchNormParams p16{to_bf16(p32.weight), to_bf16(p32.bias), to_bf16(p32.running_mean),
                            to_bf16(p32.running_var), p32.eps};
  const ConvKernel f16 = reparam::fold_batch_norm(k16, p16);
  EXPECT_EQ(f16.weight.dtype(), DType::BFloat16);
  EXPECT_EQ(f16.bias.dtype(), DType::BFloat16);
  // bf16 policy: the bf16 inputs are one rounding away from the f32 ones and the result is
  // rounded once more to 8 mantissa bits.
  const ConvKernel f32 = reparam::fold_batch_norm(k32, p32);
  EXPECT_TRUE(testing::all_close(f16.weight.to(DType::Float32), f32.weight, Tolerance::bf16()));
  EXPECT_TRUE(testing::all_close(f16.bias.to(DType::Float32), f32.bias, Tolerance::bf16()));
}

// ConvTranspose weight [in, out/g, kh, kw]: the BN scale runs along dim 1 within each group.
// in/g (3) ≠ out/g (2) so that mixing up the two group strides is caught.
TEST(KernelAlgebra, FoldBatchNormIntoConvTransposeGroups) {
  Generator gen(6);
  for (std::int64_t groups : {1, 2, 3}) {
    SCOPED_TRACE(::testing::Message() << "groups " << groups);
    const std::int64_t in = 3 * groups, out = 2 * groups;
    const ConvTransposeKernel k{uniform({in, out / groups, 3, 3}, -0.5, 0.5, gen),
                                uniform({out}, -0.5, 0.5, gen), groups};
    const BatchNormParams p = random_bn(out, gen);
    ConvTranspose2dOptions o;
    o.stride = 2;
    o.padding = 1;
    o.output_padding = 1;
    o.groups = groups;
    const Tensor x = randn({2, in, 4, 5}, {}, gen);
    const Tensor expected = bn(reference::conv_transpose2d(x, k.weight, k.bias, o), p);
    const ConvTransposeKernel f = reparam::fold_batch_norm_into_conv_transpose(k, p);
    EXPECT_TRUE(
        testing::model_close(reference::conv_transpose2d(x, f.weight, f.bias, o), expected));

    // What PyTorch's fuse_conv_bn_weights(transpose=True) does — scale W[:, j] by s[j] as if
    // there were one group — matches only for groups == 1; the test above would catch it.
    Tensor naive = k.weight.clone(MemoryFormat::Contiguous);
    const std::vector<float> g = p.weight.to_vector(), v = p.running_var.to_vector();
    for (std::int64_t r = 0; r < in; ++r)
      for (std::int64_t j = 0; j < out / groups; ++j)
        for (std::int64_t i = 0; i < 3; ++i)
          for (std::int64_t t = 0; t < 3; ++t)
            naive.set({r, j, i, t}, static_cast<float>(k.weight.at({r, j, i, t}) * g[j] /
                                                       std::sqrt(v[j] + p.eps)));
    const bool naive_ok =
        testing::model_close(reference::conv_transpose2d(x, naive, f.bias, o), expected);
    EXPECT_EQ(naive_ok, groups == 1);

    // Any per-channel map folds into the same slices (BN's is one), with a bias or without.
    const reparam::ChannelAffine a = random_affine(out, gen);
    for (const Tensor& bias : {k.bias, Tensor{}}) {
      const ConvTransposeKernel kb{k.weight, bias, groups};
      const ConvTransposeKernel fa = reparam::fold_affine_into_conv_transpose(kb, a);
      EXPECT_TRUE(testing::model_close(
          reference::conv_transpose2d(x, fa.weight, fa.bias, o),
          affine_along(reference::conv_transpose2d(x, kb.weight, kb.bias, o), a, 1)));
    }
  }
}

// ---- per-channel affine maps ---------------------------------------------------------------

// batch_norm_affine is the map BN computes; fold_batch_norm is its fold.
TEST(KernelAlgebra, BatchNormAffineIsTheBatchNorm) {
  Generator gen(31);
  const BatchNormParams p = random_bn(5, gen);
  const reparam::ChannelAffine a = reparam::batch_norm_affine(p);
  ASSERT_EQ(a.scale.size(), 5u);
  const Tensor y = randn({2, 5, 3, 4}, {}, gen);
  EXPECT_TRUE(testing::model_close(affine_along(y, a, 1), bn(y, p)));
  const ConvKernel k = random_conv(5, 3, 1, 3, true, gen);
  const ConvKernel by_bn = reparam::fold_batch_norm(k, p), by_map = reparam::fold_affine(k, a);
  EXPECT_TRUE(testing::all_close(by_map.weight, by_bn.weight, Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(by_map.bias, by_bn.bias, Tolerance::exact()));
}

// A conv then a·y + t per channel, with and without bias, and one value for every channel.
TEST(KernelAlgebra, FoldAffineMatchesConvThenAffine) {
  Generator gen(32);
  for (const bool bias : {true, false}) {
    const ConvKernel k = random_conv(6, 4, 2, 3, bias, gen);
    const Tensor x = randn({1, 4, 7, 6}, {}, gen);
    for (const reparam::ChannelAffine& a :
         {random_affine(6, gen), reparam::ChannelAffine{{-2.0}, {0.5}}}) {
      const ConvKernel f = reparam::fold_affine(k, a);
      EXPECT_TRUE(testing::model_close(conv(x, f, 1), affine_along(conv(x, k, 1), a, 1)));
    }
  }
}

// y = x·W + b with W [K, N] (feature axis 1, MatMul) or [N, K] (axis 0, Gemm transB = 1), then
// a·y + t per feature.
TEST(KernelAlgebra, FoldAffineIntoLinearBothLayouts) {
  Generator gen(34);
  const Tensor x = randn({3, 4, 5}, {}, gen);  // tokens: [batch, length, K]
  for (const std::int64_t axis : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "feature axis " << axis);
    const Tensor w_nk = uniform({6, 5}, -0.4, 0.4, gen);
    const Tensor w = axis == 0 ? w_nk : w_nk.permute({1, 0}).contiguous();
    for (const bool bias : {true, false}) {
      const Tensor b = bias ? uniform({6}, -1, 1, gen) : Tensor{};
      const reparam::ChannelAffine a = random_affine(6, gen);
      const reparam::LinearKernel f = reparam::fold_affine_into_linear({w, b, axis}, a);
      ASSERT_TRUE(f.bias.defined());
      const Tensor f_nk = axis == 0 ? f.weight : f.weight.permute({1, 0}).contiguous();
      EXPECT_TRUE(testing::model_close(reference::linear(x, f_nk, f.bias),
                                       affine_along(reference::linear(x, w_nk, b), a, 2)));
    }
  }
}

// a·x + t per input feature, then y = x·W + b; and two products of one x summed.
TEST(KernelAlgebra, FoldAffineBeforeLinearAndSumLinear) {
  Generator gen(36);
  const Tensor x = randn({3, 4, 5}, {}, gen);  // tokens: [batch, length, K]
  for (const std::int64_t axis : {0, 1}) {
    SCOPED_TRACE(::testing::Message() << "feature axis " << axis);
    const auto as_kernel = [&](const Tensor& nk) {
      return axis == 0 ? nk : nk.permute({1, 0}).contiguous();
    };
    const auto as_nk = [&](const Tensor& w) {
      return axis == 0 ? w : w.permute({1, 0}).contiguous();
    };
    const Tensor w1 = uniform({6, 5}, -0.4, 0.4, gen), w2 = uniform({6, 5}, -0.4, 0.4, gen);
    const Tensor b1 = uniform({6}, -1, 1, gen);
    const reparam::ChannelAffine a = random_affine(5, gen);
    const reparam::LinearKernel f =
        reparam::fold_affine_before_linear({as_kernel(w1), b1, axis}, a);
    EXPECT_TRUE(testing::model_close(reference::linear(x, as_nk(f.weight), f.bias),
                                     reference::linear(affine_along(x, a, 2), w1, b1)));
    const reparam::LinearKernel s =
        reparam::sum_linear({{as_kernel(w1), b1, axis}, {as_kernel(w2), {}, axis}});
    EXPECT_TRUE(testing::model_close(
        reference::linear(x, as_nk(s.weight), s.bias),
        reference::add(reference::linear(x, w1, b1), reference::linear(x, w2, Tensor{}))));
  }
  testing::expect_errors({
      {"affine of the wrong length",
       [&] {
         reparam::fold_affine_before_linear({ones({4, 3}), {}, 1}, {{1, 2, 3}, {0}});
       },
       "fold_affine_before_linear: 3 scale values for 4 channels"},
      {"terms of different shapes",
       [&] {
         reparam::sum_linear({{ones({4, 3}), {}, 1}, {ones({3, 4}), {}, 1}});
       },
       "sum_linear: term 1 has weight [3, 4] with features on axis 1, term 0 [4, 3]"},
  });
}

TEST(KernelAlgebra, AffineFoldErrors) {
  Generator gen(35);
  const ConvKernel k = random_conv(4, 4, 1, 3, true, gen);
  BatchNormParams negative_var = random_bn(4, gen);
  negative_var.running_var = from_values(std::vector<float>{1, -0.5f, 1, 1}, {4});
  const reparam::ChannelAffine three{{1, 2, 3}, {0}};
  testing::expect_errors({
      {"affine of the wrong length", [&] { reparam::fold_affine(k, three); },
       "fold_affine: 3 scale values for 4 channels (1 or one per channel)"},
      {"conv transpose affine length",
       [&] {
         reparam::fold_affine_into_conv_transpose({ones({4, 2, 3, 3}), {}, 2}, three);
       },
       "fold_affine_into_conv_transpose: 3 scale values for 4 channels"},
      {"linear feature axis 2",
       [&] {
         reparam::fold_affine_into_linear({ones({4, 3}), {}, 2}, {});
       },
       "fold_affine_into_linear: feature_axis (2) must be 0 or 1"},
      {"linear 3-d weight",
       [&] {
         reparam::fold_affine_into_linear({ones({2, 4, 3}), {}, 1}, {});
       },
       "fold_affine_into_linear: weight must be 2-d"},
      {"linear bias length",
       [&] {
         reparam::fold_affine_into_linear({ones({4, 3}), ones({4}), 1}, {});
       },
       "fold_affine_into_linear: bias has shape [4], expected [3]"},
      {"BN map of a negative variance", [&] { reparam::batch_norm_affine(negative_var); },
       "batch_norm_affine: running_var[1] = -0.5 is negative"},
  });
}

// ---- padding and alignment -----------------------------------------------------------------

TEST(KernelAlgebra, PadKernelPlacesTheKernelAtTheCentre) {
  const ConvKernel k{from_values(std::vector<float>{1, 2, 3}, {1, 1, 1, 3}),
                     from_values(std::vector<float>{7}, {1}), 1};
  const ConvKernel p = reparam::pad_kernel_to(k, {3, 5});
  const std::vector<float> expected = {0, 0, 0, 0, 0,  //
                                       0, 1, 2, 3, 0,  //
                                       0, 0, 0, 0, 0};
  EXPECT_TRUE(
      testing::all_close(p.weight, from_values(expected, {1, 1, 3, 5}), Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(p.bias, k.bias, Tolerance::exact()));
}

TEST(KernelAlgebra, BranchAlignment) {
  using reparam::check_branch_alignment;
  EXPECT_NO_THROW(check_branch_alignment(1, 0, 3, 1));
  EXPECT_NO_THROW(check_branch_alignment(1, 0, 5, 2));
  EXPECT_NO_THROW(check_branch_alignment({1, 3}, {0, 1}, 3, 1));
  EXPECT_NO_THROW(check_branch_alignment({3, 1}, {1, 0}, 3, 1));
  EXPECT_NO_THROW(check_branch_alignment(1, Padding2d::same(), 3, Padding2d::same()));
  EXPECT_NO_THROW(check_branch_alignment(1, 0, 3, 2, 2));  // dilation 2: P − p = 2·(3 − 1)/2
  EXPECT_NO_THROW(check_branch_alignment(3, 1, 7, 3));  // 7×7 with padding 3 holds a 3×3 with 1
}

// ---- RepVGG, ACNet, QARepVGG, MobileOne: whole blocks --------------------------------------

// RepVGG: BN(conv3×3(x)) + BN(conv1×1(x)) + BN(x), for groups 1, 2 and depthwise.
TEST(KernelAlgebra, RepVGGBlock) {
  Generator gen(7);
  const std::int64_t c = 4;
  for (std::int64_t groups : {1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << "groups " << groups);
    const ConvKernel dense = random_conv(c, c, groups, 3, false, gen);
    const ConvKernel pointwise = random_conv(c, c, groups, 1, false, gen);
    const BatchNormParams bn_dense = random_bn(c, gen), bn_1x1 = random_bn(c, gen),
                          bn_id = random_bn(c, gen);
    const Tensor x = randn({2, c, 6, 7}, {}, gen);
    const Tensor expected =
        sum({bn(conv(x, dense, 1), bn_dense), bn(conv(x, pointwise, 0), bn_1x1), bn(x, bn_id)});

    reparam::check_branch_alignment(1, 0, 3, 1);
    const ConvKernel fused = reparam::sum_branches(
        {reparam::fold_batch_norm(dense, bn_dense),
         reparam::pad_kernel_to(reparam::fold_batch_norm(pointwise, bn_1x1), 3),
         reparam::identity_with_batch_norm(c, groups, 3, bn_id)});
    EXPECT_TRUE(testing::model_close(conv(x, fused, 1), expected));
  }
}

// The same block with every parameter and the input in bfloat16: the algebra rounds once to
// bf16, the fused conv runs in bf16.
TEST(KernelAlgebra, RepVGGBlockBFloat16) {
  Generator gen(20);
  const std::int64_t c = 4, groups = 2;
  const auto bf16 = [](const Tensor& t) { return t.to(DType::BFloat16); };
  const auto bf16_conv = [&](const ConvKernel& k) {
    return ConvKernel{bf16(k.weight), Tensor{}, k.groups};
  };
  const auto bf16_bn = [&](const BatchNormParams& p) {
    return BatchNormParams{bf16(p.weight), bf16(p.bias), bf16(p.running_mean), bf16(p.running_var),
                           p.eps};
  };
  // Round the f32 parameters to bf16 first, so that the f32 reference sees the same values.
  const ConvKernel dense = bf16_conv(random_conv(c, c, groups, 3, false, gen));
  const ConvKernel pointwise = bf16_conv(random_conv(c, c, groups, 1, false, gen));
  const BatchNormParams b3 = bf16_bn(random_bn(c, gen)), b1 = bf16_bn(random_bn(c, gen)),
                        bid = bf16_bn(random_bn(c, gen));
  const Tensor x = bf16(randn({2, c, 6, 5}, {}, gen));
  const auto f32 = [](const Tensor& t) { return t.to(DType::Float32); };
  const auto f32_bn = [&](const BatchNormParams& p) {
    return BatchNormParams{f32(p.weight), f32(p.bias), f32(p.running_mean), f32(p.running_var),
                           p.eps};
  };
  const Tensor expected =
      sum({bn(conv(f32(x), {f32(dense.weight), Tensor{}, groups}, 1), f32_bn(b3)),
           bn(conv(f32(x), {f32(pointwise.weight), Tensor{}, groups}, 0), f32_bn(b1)),
           bn(f32(x), f32_bn(bid))});
  const ConvKernel fused =
      reparam::sum_branches({reparam::fold_batch_norm(dense, b3),
                             reparam::pad_kernel_to(reparam::fold_batch_norm(pointwise, b1), 3),
                             reparam::identity_with_batch_norm(c, groups, 3, bid)});
  ASSERT_EQ(fused.weight.dtype(), DType::BFloat16);
  const Tensor actual = conv(x, fused, 1);
  ASSERT_EQ(actual.dtype(), DType::BFloat16);
  // bf16 policy: the fused weights and the output are each rounded to 8 mantissa bits.
  EXPECT_TRUE(testing::all_close(f32(actual), expected, Tolerance::bf16()));
}

// A RepVGG block with stride 2 (no identity branch; in ≠ out).
TEST(KernelAlgebra, RepVGGBlockStride2) {
  Generator gen(8);
  const ConvKernel dense = random_conv(6, 4, 2, 3, false, gen);
  const ConvKernel pointwise = random_conv(6, 4, 2, 1, false, gen);
  const BatchNormParams b3 = random_bn(6, gen), b1 = random_bn(6, gen);
  const Tensor x = randn({1, 4, 9, 8}, {}, gen);
  const Tensor expected = sum({bn(conv(x, dense, 1, 2), b3), bn(conv(x, pointwise, 0, 2), b1)});
  const ConvKernel fused =
      reparam::sum_branches({reparam::fold_batch_norm(dense, b3),
                             reparam::pad_kernel_to(reparam::fold_batch_norm(pointwise, b1), 3)});
  EXPECT_TRUE(testing::model_close(conv(x, fused, 1, 2), expected));
}

// ACNet: 3×3 (padding 1) + 1×3 (padding (0, 1)) + 3×1 (padding (1, 0)), each with BN.
TEST(KernelAlgebra, ACNetSquareHorizontalVertical) {
  Generator gen(9);
  for (std::int64_t stride : {1, 2}) {
    const ConvKernel square = random_conv(5, 3, 1, 3, false, gen);
    const ConvKernel hor = random_conv(5, 3, 1, {1, 3}, false, gen);
    const ConvKernel ver = random_conv(5, 3, 1, {3, 1}, false, gen);
    const BatchNormParams bs = random_bn(5, gen), bh = random_bn(5, gen), bv = random_bn(5, gen);
    const Tensor x = randn({2, 3, 8, 7}, {}, gen);
    const Tensor expected =
        sum({bn(conv(x, square, 1, stride), bs), bn(conv(x, hor, {0, 1}, stride), bh),
             bn(conv(x, ver, {1, 0}, stride), bv)});
    reparam::check_branch_alignment({1, 3}, {0, 1}, 3, 1);
    reparam::check_branch_alignment({3, 1}, {1, 0}, 3, 1);
    const ConvKernel fused =
        reparam::sum_branches({reparam::fold_batch_norm(square, bs),
                               reparam::pad_kernel_to(reparam::fold_batch_norm(hor, bh), 3),
                               reparam::pad_kernel_to(reparam::fold_batch_norm(ver, bv), 3)});
    EXPECT_TRUE(testing::model_close(conv(x, fused, 1, stride), expected));
  }
}

// QARepVGG: BN(BN(conv3×3(x)) + conv1×1(x) + x) — the 1×1 and identity have no BN of their
// own, one BN follows the sum.
TEST(KernelAlgebra, QARepVGGBatchNormAfterSum) {
  Generator gen(10);
  const std::int64_t c = 6;
  const ConvKernel dense = random_conv(c, c, 1, 3, false, gen);
  const ConvKernel pointwise = random_conv(c, c, 1, 1, false, gen);
  const BatchNormParams bn_dense = random_bn(c, gen), bn_after = random_bn(c, gen);
  const Tensor x = randn({2, c, 5, 6}, {}, gen);
  const Tensor expected =
      bn(sum({bn(conv(x, dense, 1), bn_dense), conv(x, pointwise, 0), x}), bn_after);
  const ConvKernel fused =
      reparam::fold_batch_norm(reparam::sum_branches({reparam::fold_batch_norm(dense, bn_dense),
                                                      reparam::pad_kernel_to(pointwise, 3),
                                                      reparam::identity_kernel(c, 1, 3)}),
                               bn_after);
  EXPECT_TRUE(testing::model_close(conv(x, fused, 1), expected));
}

// MobileOne depthwise: k = 3 over-parameterized 3×3 conv+BN branches, the 1×1 "scale"
// conv+BN branch, and the skip BN.
TEST(KernelAlgebra, MobileOneDepthwise) {
  Generator gen(11);
  const std::int64_t c = 6;
  std::vector<Tensor> terms;
  std::vector<ConvKernel> branches;
  const Tensor x = randn({1, c, 7, 7}, {}, gen);
  for (int i = 0; i < 3; ++i) {
    const ConvKernel k = random_conv(c, c, c, 3, false, gen);
    const BatchNormParams p = random_bn(c, gen);
    terms.push_back(bn(conv(x, k, 1), p));
    branches.push_back(reparam::fold_batch_norm(k, p));
  }
  const ConvKernel scale = random_conv(c, c, c, 1, false, gen);
  const BatchNormParams bn_scale = random_bn(c, gen), bn_skip = random_bn(c, gen);
  terms.push_back(bn(conv(x, scale, 0), bn_scale));
  terms.push_back(bn(x, bn_skip));
  branches.push_back(reparam::pad_kernel_to(reparam::fold_batch_norm(scale, bn_scale), 3));
  branches.push_back(reparam::identity_with_batch_norm(c, c, 3, bn_skip));
  EXPECT_TRUE(testing::model_close(conv(x, reparam::sum_branches(branches), 1), sum(terms)));
}

// ---- identity ------------------------------------------------------------------------------

TEST(KernelAlgebra, IdentityKernelPerGroup) {
  Generator gen(12);
  const std::int64_t c = 6;
  const Tensor x = randn({2, c, 5, 6}, {}, gen);
  for (std::int64_t groups : {1, 2, 3, 6})
    for (Size2d k : {Size2d(1), Size2d(3), Size2d(5), Size2d(3, 5)}) {
      SCOPED_TRACE(::testing::Message() << "groups " << groups << " kernel " << k.h << "x" << k.w);
      const ConvKernel id = reparam::identity_kernel(c, groups, k);
      EXPECT_EQ(id.weight.sizes(), (Shape{c, c / groups, k.h, k.w}));
      // One product x·1 per output and zeros elsewhere: exact.
      EXPECT_TRUE(
          testing::all_close(conv(x, id, {(k.h - 1) / 2, (k.w - 1) / 2}), x, Tolerance::exact()));
      const BatchNormParams p = random_bn(c, gen);
      EXPECT_TRUE(testing::model_close(conv(x, reparam::identity_with_batch_norm(c, groups, k, p),
                                            {(k.h - 1) / 2, (k.w - 1) / 2}),
                                       bn(x, p)));
    }
}

TEST(KernelAlgebra, IdentityKernelBFloat16) {
  const ConvKernel id = reparam::identity_kernel(4, 2, 3, DType::BFloat16);
  EXPECT_EQ(id.weight.dtype(), DType::BFloat16);
  const Tensor x = randn({1, 4, 3, 3}).to(DType::BFloat16);
  EXPECT_TRUE(testing::all_close(conv(x, id, 1), x, Tolerance::exact()));
}

// ---- sequential 1×1 → K×K (DBB) ------------------------------------------------------------

// conv_K(pad(conv_1x1(x), value = b1 per channel)) == merged conv on the zero-padded x.
TEST(KernelAlgebra, MergeSequential1x1ThenKxK) {
  Generator gen(13);
  for (std::int64_t groups : {1, 2})
    for (std::int64_t k : {3, 5})
      for (std::int64_t stride : {1, 2}) {
        SCOPED_TRACE(::testing::Message()
                     << "groups " << groups << " k " << k << " stride " << stride);
        const std::int64_t in = 4, mid = 6, out = 4, p = k / 2;
        const ConvKernel first = random_conv(mid, in, groups, 1, true, gen);
        const ConvKernel second = random_conv(out, mid, groups, k, true, gen);
        const Tensor x = randn({2, in, 7, 6}, {}, gen);
        const Tensor y = conv(x, first, 0);
        const Tensor expected = conv(pad_per_channel(y, p, first.bias), second, 0, stride);
        const ConvKernel merged = reparam::merge_sequential_1x1_kxk(first, second);
        EXPECT_EQ(merged.weight.sizes(), (Shape{out, in / groups, k, k}));
        const Tensor actual = conv(x, merged, p, stride);
        EXPECT_TRUE(testing::model_close(actual, expected));
        // The border condition matters: with zero padding the edges differ (b1 ≠ 0).
        EXPECT_FALSE(testing::model_close(actual, conv(y, second, p, stride)));
      }
}

// DBB's 1×1 → K×K branch with BN after each conv: conv1×1 → BNAndPad → convK×K → BN. The pad
// value is BN(0) = β − μ·s, the bias of the folded 1×1 conv.
TEST(KernelAlgebra, MergeSequentialWithBatchNorm) {
  Generator gen(14);
  const std::int64_t c = 4, groups = 2;
  const ConvKernel first = random_conv(c, c, groups, 1, false, gen);
  const ConvKernel second = random_conv(c, c, groups, 3, false, gen);
  const BatchNormParams b1 = random_bn(c, gen), b2 = random_bn(c, gen);
  const Tensor x = randn({1, c, 6, 6}, {}, gen);
  const ConvKernel f1 = reparam::fold_batch_norm(first, b1);
  const Tensor expected =
      bn(conv(pad_per_channel(bn(conv(x, first, 0), b1), 1, f1.bias), second, 0), b2);
  const ConvKernel merged =
      reparam::merge_sequential_1x1_kxk(f1, reparam::fold_batch_norm(second, b2));
  EXPECT_TRUE(testing::model_close(conv(x, merged, 1), expected));
}

// ---- average pooling -----------------------------------------------------------------------

TEST(KernelAlgebra, AvgPoolKernelMatchesAvgPool2d) {
  Generator gen(15);
  const std::int64_t c = 4;
  const Tensor x = randn({2, c, 7, 8}, {}, gen);
  for (std::int64_t groups : {1, 2, 4})
    for (std::int64_t k : {2, 3})
      for (std::int64_t stride : {1, 2})
        for (std::int64_t padding : {std::int64_t{0}, k / 2}) {
          SCOPED_TRACE(::testing::Message() << "groups " << groups << " k " << k << " stride "
                                            << stride << " padding " << padding);
          AvgPool2dOptions o;
          o.kernel_size = k;
          o.stride = stride;
          o.padding = padding;
          o.count_include_pad = true;
          const ConvKernel avg = reparam::avg_pool_kernel(c, groups, k);
          EXPECT_EQ(avg.weight.sizes(), (Shape{c, c / groups, k, k}));
          EXPECT_TRUE(
              testing::model_close(conv(x, avg, padding, stride), reference::avg_pool2d(x, o)));
        }
}

// DBB's average branch: conv1×1 → BNAndPad → avg_pool K×K → BN, as one K×K conv.
TEST(KernelAlgebra, DbbAverageBranch) {
  Generator gen(16);
  const std::int64_t in = 4, out = 6;
  for (std::int64_t groups : {1, 2}) {
    const ConvKernel first = random_conv(out, in, groups, 1, false, gen);
    const BatchNormParams b1 = random_bn(out, gen), b2 = random_bn(out, gen);
    const Tensor x = randn({1, in, 6, 7}, {}, gen);
    const ConvKernel f1 = reparam::fold_batch_norm(first, b1);
    AvgPool2dOptions o;
    o.kernel_size = 3;
    o.stride = 1;
    const Tensor expected =
        bn(reference::avg_pool2d(pad_per_channel(bn(conv(x, first, 0), b1), 1, f1.bias), o), b2);
    const ConvKernel merged = reparam::fold_batch_norm(
        reparam::merge_sequential_1x1_kxk(f1, reparam::avg_pool_kernel(out, groups, 3)), b2);
    EXPECT_TRUE(testing::model_close(conv(x, merged, 1), expected));
  }
}

// ---- sums and the bias-only branch ---------------------------------------------------------

TEST(KernelAlgebra, SumBranchesBias) {
  Generator gen(17);
  const ConvKernel a = random_conv(3, 3, 1, 3, false, gen);
  const ConvKernel b = random_conv(3, 3, 1, 3, false, gen);
  EXPECT_FALSE(reparam::sum_branches({a, b}).bias.defined());
  const ConvKernel c = random_conv(3, 3, 1, 3, true, gen);
  const ConvKernel s = reparam::sum_branches({a, c, b});
  ASSERT_TRUE(s.bias.defined());
  EXPECT_TRUE(testing::all_close(s.bias, c.bias, Tolerance::exact()));
  const Tensor x = randn({1, 3, 5, 5}, {}, gen);
  EXPECT_TRUE(
      testing::model_close(conv(x, s, 1), sum({conv(x, a, 1), conv(x, c, 1), conv(x, b, 1)})));
}

TEST(KernelAlgebra, BiasOnlyBranch) {
  Generator gen(18);
  const Tensor shift = uniform({4}, -1, 1, gen);
  const ConvKernel k = random_conv(4, 6, 2, 3, true, gen);
  const ConvKernel b = reparam::bias_only_kernel(shift, 6, 2, 3);
  EXPECT_EQ(b.weight.sizes(), k.weight.sizes());
  const Tensor x = randn({1, 6, 5, 5}, {}, gen);
  const Tensor expected = reference::add(conv(x, k, 1), shift.reshape({1, 4, 1, 1}));
  EXPECT_TRUE(testing::model_close(conv(x, reparam::sum_branches({k, b}), 1), expected));
}

// ---- expected failures ---------------------------------------------------------------------

TEST(KernelAlgebra, BadArguments) {
  Generator gen(19);
  const ConvKernel k3 = random_conv(4, 4, 1, 3, true, gen);
  const ConvKernel k1 = random_conv(4, 4, 1, 1, true, gen);
  const ConvKernel k3g2 = random_conv(4, 4, 2, 3, true, gen);
  const BatchNormParams good = random_bn(4, gen);
  BatchNormParams negative_var = good;
  negative_var.running_var = from_values(std::vector<float>{1, -0.5f, 1, 1}, {4});
  BatchNormParams zero_var = good;
  zero_var.running_var = from_values(std::vector<float>{1, 1, 0, 1}, {4});
  zero_var.eps = 0;
  BatchNormParams short_bn = random_bn(3, gen);
  BatchNormParams bf16_bn = good;
  bf16_bn.running_mean = good.running_mean.to(DType::BFloat16);
  const ConvKernel int64_weight{zeros({4, 4, 3, 3}, {DType::Int64}), Tensor{}, 1};
  const ConvKernel bad_bias{k3.weight, ones({3}), 1};
  const ConvKernel bad_groups{k3.weight, Tensor{}, 3};
  const ConvTransposeKernel t{ones({4, 3, 3, 3}), Tensor{}, 2};  // out = 6

  testing::expect_errors({
      {"identity with an even kernel", [] { reparam::identity_kernel(4, 1, 2); },
       "identity_kernel: kernel 2x2 must be odd"},
      {"identity 3x4",
       [] {
         reparam::identity_kernel(4, 1, {3, 4});
       },
       "must be odd"},
      {"identity C % g != 0", [] { reparam::identity_kernel(5, 2, 3); },
       "identity_kernel: groups (2) must divide channels (5)"},
      {"identity int64", [] { reparam::identity_kernel(4, 1, 3, DType::Int64); },
       "identity_kernel: dtype int64 is not supported"},
      {"pad with (K - k) odd", [&] { reparam::pad_kernel_to(k1, 2); },
       "pad_kernel_to: a 1x1 kernel cannot be centered in 2x2: (K - k) must be even"},
      {"pad to a smaller kernel", [&] { reparam::pad_kernel_to(k3, 1); },
       "pad_kernel_to: target 1x1 is smaller than the kernel 3x3"},
      {"padding that does not center", [] { reparam::check_branch_alignment(1, 1, 3, 1); },
       "branch mismatch: a 1x1 branch with padding (top 1, left 1, bottom 1, right 1) does not "
       "center in a 3x3 branch"},
      {"1x3 with square padding",
       [] {
         reparam::check_branch_alignment({1, 3}, 1, 3, 1);
       },
       "rows need P - p = d*(K - k)/2 = 1, got 0 (top)"},
      {"top aligned, bottom not",
       [] { reparam::check_branch_alignment(1, Padding2d::asymmetric(0, 0, 1, 0), 3, 1); },
       "rows need P - p = d*(K - k)/2 = 1, got 1 (top) and 0 (bottom)"},
      {"alignment with (K - k) odd", [] { reparam::check_branch_alignment(1, 0, 2, 0); },
       "branch mismatch"},
      {"negative variance", [&] { reparam::fold_batch_norm(k3, negative_var); },
       "fold_batch_norm: running_var[1] = -0.5 is negative"},
      {"zero variance, zero eps", [&] { reparam::fold_batch_norm(k3, zero_var); },
       "fold_batch_norm: running_var[2] + eps is 0 (division by zero"},
      {"BN shorter than out_channels", [&] { reparam::fold_batch_norm(k3, short_bn); },
       "fold_batch_norm: running_mean has shape [3], expected [4]"},
      {"BN in another dtype", [&] { reparam::fold_batch_norm(k3, bf16_bn); },
       "fold_batch_norm: running_mean has dtype bfloat16 but the weight has float32"},
      {"undefined weight", [&] { reparam::fold_batch_norm(ConvKernel{}, good); },
       "fold_batch_norm: conv weight is undefined"},
      {"int64 weight", [&] { reparam::fold_batch_norm(int64_weight, good); },
       "fold_batch_norm: conv weight has dtype int64"},
      {"bias of the wrong length", [&] { reparam::fold_batch_norm(bad_bias, good); },
       "fold_batch_norm: conv bias has shape [3], expected [4]"},
      {"groups not dividing out_channels", [&] { reparam::fold_batch_norm(bad_groups, good); },
       "fold_batch_norm: conv groups (3) must divide out_channels (4)"},
      {"conv transpose BN length", [&] { reparam::fold_batch_norm_into_conv_transpose(t, good); },
       "fold_batch_norm_into_conv_transpose: running_mean has shape [4], expected [6]"},
      {"sum of nothing", [] { reparam::sum_branches({}); }, "sum_branches: no branches"},
      {"sum of different shapes",
       [&] {
         reparam::sum_branches({k3, k1});
       },
       "sum_branches: branch 1 has weight [4, 4, 1, 1] but branch 0 has [4, 4, 3, 3]"},
      {"sum of different groups",
       [&] {
         reparam::sum_branches({k3, k3g2});
       },
       "sum_branches: branch 1 has groups 2 but branch 0 has 1"},
      {"sum of different dtypes",
       [&] {
         reparam::sum_branches({k3, {k3.weight.to(DType::BFloat16), Tensor{}, 1}});
       },
       "sum_branches: branch 1 weight has dtype bfloat16 but branch 0 has float32"},
      {"merge: first not 1x1", [&] { reparam::merge_sequential_1x1_kxk(k3, k3); },
       "merge_sequential_1x1_kxk: the first conv must be 1x1, got 3x3"},
      {"merge: groups differ", [&] { reparam::merge_sequential_1x1_kxk(k1, k3g2); },
       "merge_sequential_1x1_kxk: groups differ: first 1, second 2"},
      {"merge: channels differ",
       [&] { reparam::merge_sequential_1x1_kxk(random_conv(6, 4, 1, 1, false, gen), k3); },
       "the second conv expects 4 input channels (4 per group x 1 groups), the first produces 6"},
      {"avg pool C % g != 0", [] { reparam::avg_pool_kernel(6, 4, 3); },
       "avg_pool_kernel: groups (4) must divide channels (6)"},
      {"avg pool zero kernel",
       [] {
         reparam::avg_pool_kernel(4, 1, {0, 3});
       },
       "avg_pool_kernel: kernel size (0, 3) must be positive"},
      {"bias-only with groups not dividing", [] { reparam::bias_only_kernel(ones({4}), 6, 4, 3); },
       "bias_only_kernel: groups (4) must divide in_channels (6) and out_channels (4)"},
  });
}

}  // namespace
}  // namespace refold
