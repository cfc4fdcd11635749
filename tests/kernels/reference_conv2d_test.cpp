// Tests of refold::reference::conv2d — the oracle every faster conv is compared with, so it is
// checked against hand-computed values and against independent formulations (im2col + linear,
// per-group convs, zero-dilated kernels, explicit zero padding), over layouts and dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/layouts.h"

namespace refold {
namespace {

using reference::conv2d;
using testing::Tolerance;
using testing::values;
constexpr auto NCHW = MemoryFormat::Contiguous;
constexpr auto CL = MemoryFormat::ChannelsLast;

// [C_out, C_in/groups, kh, kw] at PyTorch's default init scale (fan_in = C_in/groups·kh·kw).
Tensor conv_weight(const Shape& sizes, Generator& gen) {
  return testing::pytorch_init(sizes, sizes[1] * sizes[2] * sizes[3], gen);
}

Conv2dOptions make_options(Size2d stride, Padding2d padding, Size2d dilation, std::int64_t groups) {
  Conv2dOptions o;
  o.stride = stride;
  o.padding = padding;
  o.dilation = dilation;
  o.groups = groups;
  return o;
}

// A view of `count` entries of dimension `dim` starting at `start` (shares storage).
Tensor narrow(const Tensor& t, std::int64_t dim, std::int64_t start, std::int64_t count) {
  Shape sizes = t.sizes();
  sizes[static_cast<std::size_t>(dim)] = count;
  return t.as_strided(sizes, t.strides(), t.storage_offset() + start * t.stride(dim));
}

// ---------------------------------------------------------------- hand-computed cases

TEST(ReferenceConv2d, HandComputedValid2x2WithBias) {
  // in = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]], bias 0.5:
  // out[0,0] = 1·1 + 2·2 + 4·3 + 5·4 = 37, out[0,1] = 2 + 6 + 15 + 24 = 47,
  // out[1,0] = 4 + 10 + 21 + 32 = 67,     out[1,1] = 5 + 12 + 24 + 36 = 77.
  const Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  const Tensor w = values({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor b = values({0.5f}, {1});
  const Tensor out = conv2d(x, w, b);
  EXPECT_TRUE(testing::all_close(out, values({37.5f, 47.5f, 67.5f, 77.5f}, {1, 1, 2, 2}),
                                 Tolerance::exact()));
}

TEST(ReferenceConv2d, HandComputedStride2Padding1) {
  // A 3×3 all-ones kernel sums each window; with padding 1 and stride 2 the four windows of the
  // 3×3 input 1..9 cover its 2×2 corners: 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9.
  const Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  const Tensor out = conv2d(x, ones({1, 1, 3, 3}), {}, make_options(2, 1, 1, 1));
  EXPECT_TRUE(testing::all_close(out, values({12, 16, 24, 28}, {1, 1, 2, 2}), Tolerance::exact()));
}

TEST(ReferenceConv2d, CenterTapKernelWithPadding1IsIdentity) {
  // w[o, c] = δ(o, c) at the kernel center: out[n,o,y,x] = in[n,o,y,x] (the seed's identity).
  Generator gen(1);
  const Tensor x = randn({2, 5, 6, 7}, {}, gen);
  Tensor w = zeros({5, 5, 3, 3});
  for (std::int64_t c = 0; c < 5; ++c) w.set({c, c, 1, 1}, 1.0f);
  EXPECT_TRUE(
      testing::all_close(conv2d(x, w, {}, make_options(1, 1, 1, 1)), x, Tolerance::exact()));
  // The same per group: a depthwise center tap.
  Tensor wd = zeros({5, 1, 3, 3});
  for (std::int64_t c = 0; c < 5; ++c) wd.set({c, 0, 1, 1}, 1.0f);
  EXPECT_TRUE(
      testing::all_close(conv2d(x, wd, {}, make_options(1, 1, 1, 5)), x, Tolerance::exact()));
}

TEST(ReferenceConv2d, OneByOneIsPerPixelMatmul) {
  // out[n,o,y,x] = b[o] + sum_c w[o,c] · in[n,c,y,x], written out in double.
  Generator gen(2);
  const Tensor x = randn({2, 3, 4, 5}, {}, gen);
  const Tensor w = randn({4, 3, 1, 1}, {}, gen);
  const Tensor b = randn({4}, {}, gen);
  Tensor expected = empty({2, 4, 4, 5});
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t o = 0; o < 4; ++o)
      for (std::int64_t y = 0; y < 4; ++y)
        for (std::int64_t xx = 0; xx < 5; ++xx) {
          double acc = b.at({o});
          for (std::int64_t c = 0; c < 3; ++c)
            acc += static_cast<double>(w.at({o, c, 0, 0})) * x.at({n, c, y, xx});
          expected.set({n, o, y, xx}, static_cast<float>(acc));
        }
  EXPECT_TRUE(testing::all_close(conv2d(x, w, b), expected, Tolerance::op_f32()));
}

// ---------------------------------------------------------------- independent cross-checks

struct ConvCase {
  std::string name;
  Shape input, weight;
  Size2d stride = 1;
  Pads2d pads{};  // explicit per-side padding
  Size2d dilation = 1;
  std::int64_t groups = 1;

  Conv2dOptions options() const {
    return make_options(stride, Padding2d::asymmetric(pads.top, pads.left, pads.bottom, pads.right),
                        dilation, groups);
  }
};

// Random operands for a case, drawn in the order input, weight, bias.
struct Operands {
  Tensor x, w, b;
};
Operands random_operands(const ConvCase& k, Generator& gen) {
  Tensor x = randn(k.input, {}, gen);
  Tensor w = conv_weight(k.weight, gen);
  return {x, w, randn({k.weight[0]}, {}, gen)};
}

// im2col: patches[n, y, x, (c·kh + i)·kw + j] = in[n, c, y·sh − top + i·dh, x·sw − left + j·dw]
// (zero outside the input). A groups-1 conv is then linear(patches, w.reshape(C_out, −1), b).
Tensor im2col(const Tensor& x, const ConvCase& k) {
  const std::int64_t c_in = x.size(1), h = x.size(2), w = x.size(3);
  const std::int64_t kh = k.weight[2], kw = k.weight[3];
  const std::int64_t oh =
      (h + k.pads.top + k.pads.bottom - k.dilation.h * (kh - 1) - 1) / k.stride.h + 1;
  const std::int64_t ow =
      (w + k.pads.left + k.pads.right - k.dilation.w * (kw - 1) - 1) / k.stride.w + 1;
  Tensor patches = zeros({x.size(0), oh, ow, c_in * kh * kw});
  for (std::int64_t n = 0; n < x.size(0); ++n)
    for (std::int64_t y = 0; y < oh; ++y)
      for (std::int64_t xx = 0; xx < ow; ++xx)
        for (std::int64_t c = 0; c < c_in; ++c)
          for (std::int64_t i = 0; i < kh; ++i)
            for (std::int64_t j = 0; j < kw; ++j) {
              const std::int64_t iy = y * k.stride.h - k.pads.top + i * k.dilation.h;
              const std::int64_t ix = xx * k.stride.w - k.pads.left + j * k.dilation.w;
              if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
              patches.set({n, y, xx, (c * kh + i) * kw + j}, x.at({n, c, iy, ix}));
            }
  return patches;
}

TEST(ReferenceConv2d, MatchesIm2colTimesLinear) {
  const std::vector<ConvCase> cases = {
      {"odd_13_to_19_stride2_pad1", {2, 13, 9, 8}, {19, 13, 3, 3}, 2, {1, 1, 1, 1}},
      {"dilation2", {1, 13, 11, 10}, {19, 13, 3, 3}, 1, {2, 2, 2, 2}, 2},
      {"rect_kernel_asym_pad", {2, 5, 7, 9}, {6, 5, 2, 3}, {2, 1}, {1, 0, 2, 1}, {1, 2}},
      {"one_by_one", {2, 19, 5, 6}, {13, 19, 1, 1}},
  };
  Generator gen(3);
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    const auto [x, w, b] = random_operands(k, gen);
    const Tensor out = conv2d(x, w, b, k.options());
    const Tensor via_linear =
        reference::linear(im2col(x, k), w.reshape({k.weight[0], -1}), b);  // [N, OH, OW, C_out]
    EXPECT_TRUE(testing::all_close(out.permute({0, 2, 3, 1}), via_linear, Tolerance::op_f32()));
  }
}

TEST(ReferenceConv2d, GroupsEqualConcatenatedPerGroupConvs) {
  // Group g maps input channels [g·Cig, (g+1)·Cig) with weight rows [g·Cog, (g+1)·Cog) to
  // output channels [g·Cog, (g+1)·Cog): a grouped conv is the concatenation of groups-1 convs.
  const std::vector<ConvCase> cases = {
      {"groups2_odd", {2, 26, 7, 6}, {38, 13, 3, 3}, 2, {1, 1, 1, 1}, 1, 2},
      {"depthwise_dilation2", {1, 13, 8, 7}, {13, 1, 3, 3}, 1, {2, 2, 2, 2}, 2, 13},
      {"depthwise_multiplier2_stride2", {2, 13, 6, 6}, {26, 1, 3, 3}, 2, {0, 1, 1, 0}, 1, 13},
  };
  Generator gen(4);
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    const auto [x, w, b] = random_operands(k, gen);
    const Tensor out = conv2d(x, w, b, k.options());
    const std::int64_t cig = k.input[1] / k.groups, cog = k.weight[0] / k.groups;
    ConvCase one = k;
    one.groups = 1;
    for (std::int64_t g = 0; g < k.groups; ++g) {
      const Tensor part = conv2d(narrow(x, 1, g * cig, cig), narrow(w, 0, g * cog, cog),
                                 narrow(b, 0, g * cog, cog), one.options());
      EXPECT_TRUE(testing::all_close(narrow(out, 1, g * cog, cog), part, Tolerance::op_f32()))
          << "group " << g;
    }
  }
}

TEST(ReferenceConv2d, DilationEqualsZeroDilatedKernel) {
  // Dilation d reads in[.., y·s − p + i·d, ..]: the same as a dense kernel of size d·(k−1)+1
  // holding w[i, j] at (i·dh, j·dw) and zeros between.
  const std::vector<ConvCase> cases = {
      {"d2", {2, 13, 9, 9}, {19, 13, 3, 3}, 1, {2, 2, 2, 2}, 2},
      {"d2x3_stride2", {1, 6, 10, 11}, {4, 6, 3, 2}, 2, {1, 0, 1, 2}, {2, 3}},
  };
  Generator gen(5);
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    const Tensor x = randn(k.input, {}, gen);
    const Tensor w = conv_weight(k.weight, gen);
    const std::int64_t kh = k.weight[2], kw = k.weight[3];
    Tensor dense =
        zeros({k.weight[0], k.weight[1], k.dilation.h * (kh - 1) + 1, k.dilation.w * (kw - 1) + 1});
    for (std::int64_t o = 0; o < k.weight[0]; ++o)
      for (std::int64_t c = 0; c < k.weight[1]; ++c)
        for (std::int64_t i = 0; i < kh; ++i)
          for (std::int64_t j = 0; j < kw; ++j)
            dense.set({o, c, i * k.dilation.h, j * k.dilation.w}, w.at({o, c, i, j}));
    ConvCase undilated = k;
    undilated.dilation = 1;
    EXPECT_TRUE(testing::all_close(conv2d(x, w, {}, k.options()),
                                   conv2d(x, dense, {}, undilated.options()), Tolerance::op_f32()));
  }
}

// `x` surrounded by explicit zeros, built element by element.
Tensor zero_pad(const Tensor& x, const Pads2d& p) {
  Tensor out =
      zeros({x.size(0), x.size(1), x.size(2) + p.top + p.bottom, x.size(3) + p.left + p.right});
  for (std::int64_t n = 0; n < x.size(0); ++n)
    for (std::int64_t c = 0; c < x.size(1); ++c)
      for (std::int64_t y = 0; y < x.size(2); ++y)
        for (std::int64_t xx = 0; xx < x.size(3); ++xx)
          out.set({n, c, y + p.top, xx + p.left}, x.at({n, c, y, xx}));
  return out;
}

TEST(ReferenceConv2d, AsymmetricPaddingEqualsExplicitZeroPadThenValid) {
  Generator gen(6);
  const Tensor x = randn({2, 5, 6, 7}, {}, gen);
  const Tensor w = conv_weight({4, 5, 3, 2}, gen);
  const Tensor b = randn({4}, {}, gen);
  const Pads2d pads{2, 0, 1, 3};  // top, left, bottom, right
  const Tensor out = conv2d(x, w, b, make_options({1, 2}, Padding2d::asymmetric(2, 0, 1, 3), 1, 1));
  const Tensor expected = conv2d(zero_pad(x, pads), w, b, make_options({1, 2}, 0, 1, 1));
  ASSERT_EQ(out.sizes(), (Shape{2, 4, 7, 5}));  // (6+3−3)/1+1, (7+3−2)/2+1
  EXPECT_TRUE(testing::all_close(out, expected, Tolerance::op_f32()));
}

TEST(ReferenceConv2d, SamePaddingKeepsSizeAndPutsTheOddPixelAtTheEnd) {
  // PyTorch: total padding dilation·(k−1) per axis, half before, the odd one after.
  struct Case {
    Size2d kernel, dilation;
    Pads2d expected;  // top, left, bottom, right — worked out by hand
  };
  const std::vector<Case> cases = {
      {3, 1, {1, 1, 1, 1}},      {5, 1, {2, 2, 2, 2}},      {4, 1, {1, 1, 2, 2}},
      {{4, 2}, 1, {1, 0, 2, 1}}, {{3, 2}, 2, {2, 1, 2, 1}}, {2, 3, {1, 1, 2, 2}},
  };
  Generator gen(7);
  const Tensor x = randn({2, 3, 7, 6}, {}, gen);
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "kernel " << c.kernel.h << "x" << c.kernel.w << " dilation " << c.dilation.h);
    const Tensor w = conv_weight({4, 3, c.kernel.h, c.kernel.w}, gen);
    const Tensor out = conv2d(x, w, {}, make_options(1, Padding2d::same(), c.dilation, 1));
    EXPECT_EQ(out.sizes(), (Shape{2, 4, 7, 6}));
    const Pads2d& p = c.expected;
    EXPECT_TRUE(testing::all_close(
        out, conv2d(zero_pad(x, p), w, {}, make_options(1, Padding2d::valid(), c.dilation, 1)),
        Tolerance::op_f32()));
  }
}

TEST(ReferenceConv2d, ValidPaddingIsNoPadding) {
  Generator gen(8);
  const Tensor x = randn({1, 3, 6, 5}, {}, gen);
  const Tensor w = conv_weight({2, 3, 3, 3}, gen);
  const Tensor out = conv2d(x, w, {}, make_options(1, Padding2d::valid(), 1, 1));
  EXPECT_EQ(out.sizes(), (Shape{1, 2, 4, 3}));
  EXPECT_TRUE(testing::all_close(out, conv2d(x, w), Tolerance::exact()));
}

// ---------------------------------------------------------------- layouts

TEST(ReferenceConv2d, EveryLayoutGivesIdenticalValuesAndPyTorchsOutputFormat) {
  const std::vector<ConvCase> cases = {
      {"odd_13_to_19_stride2", {2, 13, 9, 8}, {19, 13, 3, 3}, 2, {1, 1, 1, 1}},
      {"groups2_dilation2", {1, 6, 9, 7}, {4, 3, 3, 2}, 1, {2, 1, 2, 1}, 2, 2},
  };
  Generator gen(9);
  for (const ConvCase& k : cases) {
    const auto [x, w, b] = random_operands(k, gen);
    const Tensor expected = conv2d(x, w, b, k.options());
    // A bias with stride 2, inside a NaN buffer.
    const Tensor b_strided = testing::every_other_element(b);
    const std::vector<testing::LayoutVariant> xs = testing::conv_layouts(x),
                                              ws = testing::conv_layouts(w);
    for (const testing::LayoutVariant& li : xs) {
      for (const testing::LayoutVariant& lw : ws) {
        SCOPED_TRACE(k.name + ", input " + li.name + ", weight " + lw.name);
        const Tensor &xv = li.tensor, &wv = lw.tensor;
        ASSERT_EQ(xv.suggest_memory_format(), li.suggests);
        ASSERT_EQ(wv.suggest_memory_format(), lw.suggests);
        const Tensor out = conv2d(xv, wv, li.name == lw.name ? b_strided : b, k.options());
        EXPECT_TRUE(testing::all_close(out, expected, Tolerance::exact()));
        // PyTorch: channels_last out when the input or the weight suggests channels_last.
        const bool cl = li.suggests == CL || lw.suggests == CL;
        EXPECT_TRUE(out.is_contiguous(cl ? CL : NCHW)) << out.description();
      }
    }
  }
}

// ---------------------------------------------------------------- bfloat16

TEST(ReferenceConv2d, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // bf16 keeps 8 significant bits: rounding each input, weight and the output costs ≈ 2^-8
  // relative per term, so bf16 is compared with the fp32 result under the bf16 policy
  // (docs/testing.md). Weights use PyTorch's default init scale so outputs stay O(1).
  const std::vector<ConvCase> cases = {
      {"odd_13_to_19_stride2", {2, 13, 9, 8}, {19, 13, 3, 3}, 2, {1, 1, 1, 1}},
      {"groups2_dilation2", {1, 26, 9, 9}, {38, 13, 3, 3}, 1, {2, 2, 2, 2}, 2, 2},
      {"depthwise", {2, 19, 6, 7}, {19, 1, 3, 3}, 1, {1, 1, 1, 1}, 1, 19},
  };
  Generator gen(10);
  for (const ConvCase& k : cases) {
    for (const MemoryFormat format : {NCHW, CL}) {
      SCOPED_TRACE(k.name + std::string(" ") + std::string(memory_format_name(format)));
      const Tensor x = randn(k.input, {DType::Float32, format}, gen);
      const Tensor w = conv_weight(k.weight, gen);
      const Tensor b = testing::uniform({k.weight[0]}, 0.5, gen);
      const Tensor expected = conv2d(x, w, b, k.options());
      const Tensor out =
          conv2d(x.to(DType::BFloat16), w.to(DType::BFloat16), b.to(DType::BFloat16), k.options());
      EXPECT_EQ(out.dtype(), DType::BFloat16);
      EXPECT_TRUE(out.is_contiguous(format));
      EXPECT_TRUE(testing::all_close(out, expected, Tolerance::bf16()));
    }
  }
}

TEST(ReferenceConv2d, BFloat16OutputIsRoundedOnceFromTheDoubleSum) {
  // 1 + 2^-8 + 2^-30 lies just above the bf16 tie 1 + 2^-8 (bf16 spacing at 1 is 2^-7), so the
  // nearest bf16 is 1 + 2^-7. Rounding through float first would land exactly on the tie and
  // round to even, giving 1.
  const Tensor x =
      values({1.0f, std::ldexp(1.0f, -8), std::ldexp(1.0f, -30)}, {1, 3, 1, 1}).to(DType::BFloat16);
  const Tensor w = ones({1, 3, 1, 1}, DType::BFloat16);
  const Tensor out = conv2d(x, w);
  EXPECT_EQ(out.item(), 1.0f + std::ldexp(1.0f, -7));
}

// ---------------------------------------------------------------- bad arguments

TEST(ReferenceConv2d, RejectsBadArgumentsWithMessagesNamingTheValue) {
  Generator gen(11);
  const Tensor x = randn({1, 8, 5, 5}, {}, gen);
  const Tensor w = randn({4, 8, 3, 3}, {}, gen);
  const auto opt = [](auto&& edit) {
    Conv2dOptions o;
    edit(o);
    return o;
  };
  const std::vector<testing::ErrorCase> rows = {
      {"stride 0", [&] { return conv2d(x, w, {}, opt([](auto& o) {
                                         o.stride = {0, 1};
                                       })); },
       "stride (0, 1) must be positive"},
      {"negative stride", [&] { return conv2d(x, w, {}, opt([](auto& o) { o.stride = -2; })); },
       "stride (-2, -2) must be positive"},
      {"dilation 0", [&] { return conv2d(x, w, {}, opt([](auto& o) { o.dilation = 0; })); },
       "dilation (0, 0) must be positive"},
      {"negative dilation",
       [&] { return conv2d(x, w, {}, opt([](auto& o) {
                             o.dilation = {1, -1};
                           })); },
       "dilation (1, -1) must be positive"},
      {"negative padding", [&] { return conv2d(x, w, {}, opt([](auto& o) { o.padding = -1; })); },
       "padding must be non-negative"},
      {"negative asymmetric padding",
       [&] {
         return conv2d(x, w, {},
                       opt([](auto& o) { o.padding = Padding2d::asymmetric(0, 0, 0, -1); }));
       },
       "right -1"},
      {"groups 0", [&] { return conv2d(x, w, {}, opt([](auto& o) { o.groups = 0; })); },
       "groups (0) must be positive"},
      {"negative groups", [&] { return conv2d(x, w, {}, opt([](auto& o) { o.groups = -2; })); },
       "groups (-2) must be positive"},
      {"groups not dividing in_channels",
       [&] {
         return conv2d(x, randn({6, 2, 3, 3}, {}, gen), {}, opt([](auto& o) { o.groups = 3; }));
       },
       "groups (3) must divide in_channels (8)"},
      {"groups not dividing out_channels",
       [&] {
         return conv2d(x, randn({5, 4, 3, 3}, {}, gen), {}, opt([](auto& o) { o.groups = 2; }));
       },
       "groups (2) must divide out_channels (5)"},
      {"weight channels mismatch",
       [&] {
         return conv2d(randn({1, 3, 5, 5}, {}, gen), w);
       },
       "input has 3 channels, weight expects 8 (groups 1"},
      {"weight channels mismatch with groups",
       [&] { return conv2d(x, w, {}, opt([](auto& o) { o.groups = 2; })); },
       "input has 8 channels, weight expects 16 (groups 2"},
      {"3-d input",
       [&] {
         return conv2d(randn({8, 5, 5}, {}, gen), w);
       },
       "input must be 4-d"},
      {"5-d input",
       [&] {
         return conv2d(randn({1, 1, 8, 5, 5}, {}, gen), w);
       },
       "input must be 4-d"},
      {"2-d weight",
       [&] {
         return conv2d(x, randn({4, 8}, {}, gen));
       },
       "weight must be 4-d"},
      {"bias wrong length", [&] { return conv2d(x, w, randn({5}, {}, gen)); },
       "bias must be 1-d with out_channels (4) elements"},
      {"2-d bias",
       [&] {
         return conv2d(x, w, randn({4, 1}, {}, gen));
       },
       "bias must be 1-d with out_channels (4) elements"},
      {"kernel larger than padded input",
       [&] {
         return conv2d(x, randn({4, 8, 8, 3}, {}, gen), {}, opt([](auto& o) { o.padding = 1; }));
       },
       "height: output size would be <= 0 (input 5, padding 1/1, kernel 8"},
      {"dilated kernel larger than input",
       [&] { return conv2d(x, w, {}, opt([](auto& o) {
                             o.dilation = {1, 3};
                           })); },
       "width: output size would be <= 0"},
      {"same with stride 2",
       [&] {
         return conv2d(x, w, {}, opt([](auto& o) {
                         o.padding = Padding2d::same();
                         o.stride = 2;
                       }));
       },
       "padding 'same' requires stride 1, got stride (2, 2)"},
      {"weight bf16, input f32", [&] { return conv2d(x, w.to(DType::BFloat16)); },
       "weight dtype bfloat16 does not match input dtype float32"},
      {"bias bf16, input f32",
       [&] { return conv2d(x, w, randn({4}, {}, gen).to(DType::BFloat16)); },
       "bias dtype bfloat16 does not match input dtype float32"},
      {"int64 input",
       [&] {
         return conv2d(empty({1, 8, 5, 5}, DType::Int64), empty({4, 8, 3, 3}, DType::Int64));
       },
       "input dtype int64 is not supported"},
      {"int64 weight",
       [&] {
         return conv2d(x, empty({4, 8, 3, 3}, DType::Int64));
       },
       "weight dtype int64 is not supported"},
      {"undefined input", [&] { return conv2d(Tensor{}, w); }, "input is undefined"},
      {"undefined weight", [&] { return conv2d(x, Tensor{}); }, "weight is undefined"},
  };
  testing::expect_errors(rows, "conv2d: ");
}

}  // namespace
}  // namespace refold
