// Reference max / avg / adaptive avg pooling: known values for the PyTorch edge cases
// (ceil_mode windows, count_include_pad, divisor_override, dilation, uneven adaptive windows),
// every layout, 3-d inputs, bf16, bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/layouts.h"

namespace refold {
namespace {

using testing::iota;
using testing::Tolerance;
using testing::values;
constexpr auto CL = MemoryFormat::ChannelsLast;

MaxPool2dOptions max_opts(Size2d k, Size2d s, Size2d p, Size2d d = 1, bool ceil = false) {
  MaxPool2dOptions o;
  o.kernel_size = k;
  o.stride = s;
  o.padding = p;
  o.dilation = d;
  o.ceil_mode = ceil;
  return o;
}

AvgPool2dOptions avg_opts(Size2d k, Size2d s, Size2d p, bool ceil = false,
                          bool count_include_pad = true,
                          std::optional<std::int64_t> divisor = std::nullopt) {
  AvgPool2dOptions o;
  o.kernel_size = k;
  o.stride = s;
  o.padding = p;
  o.ceil_mode = ceil;
  o.count_include_pad = count_include_pad;
  o.divisor_override = divisor;
  return o;
}

TEST(ReferencePooling, MaxKnownValues) {
  const Tensor x = iota({1, 1, 4, 4});  // row h holds 4h … 4h+3
  MaxPool2dOptions k2;
  k2.kernel_size = 2;  // stride defaults to the kernel
  EXPECT_TRUE(testing::all_close(reference::max_pool2d(x, k2), values({5, 7, 13, 15}, {1, 1, 2, 2}),
                                 Tolerance::exact()));
  // k3 s2 p1: windows rows {−1..1}, {1..3}; padding never wins (it is −inf).
  EXPECT_TRUE(testing::all_close(reference::max_pool2d(x, max_opts(3, 2, 1)),
                                 values({5, 7, 13, 15}, {1, 1, 2, 2}), Tolerance::exact()));
}

TEST(ReferencePooling, MaxIgnoresPaddingForNegativeInputs) {
  // All inputs negative: a zero-padded max would return 0 at the borders; −inf padding does not.
  const Tensor x = values({-1, -2, -3, -4}, {1, 1, 2, 2});
  EXPECT_TRUE(testing::all_close(reference::max_pool2d(x, max_opts(2, 1, 1)),
                                 values({-1, -1, -2, -1, -1, -2, -3, -3, -4}, {1, 1, 3, 3}),
                                 Tolerance::exact()));
}

TEST(ReferencePooling, MaxDilation2) {
  // v[h][w] = (7h + 3w) mod 11; k2 d2 s1 takes the max of v[h][w], v[h][w+2], v[h+2][w],
  // v[h+2][w+2].
  //   0  3  6  9  1
  //   7 10  2  5  8
  //   3  6  9  1  4
  //  10  2  5  8  0
  //   6  9  1  4  7
  std::vector<float> v;
  for (int h = 0; h < 5; ++h)
    for (int w = 0; w < 5; ++w) v.push_back(static_cast<float>((7 * h + 3 * w) % 11));
  const Tensor x = from_values(v, {1, 1, 5, 5});
  EXPECT_TRUE(testing::all_close(reference::max_pool2d(x, max_opts(2, 1, 0, 2)),
                                 values({9, 9, 9, 10, 10, 8, 9, 9, 9}, {1, 1, 3, 3}),
                                 Tolerance::exact()));
}

TEST(ReferencePooling, MaxPropagatesNaN) {
  const Tensor x = values({1, std::nanf(""), 3, 4}, {1, 1, 1, 4});
  const Tensor y = reference::max_pool2d(x, max_opts({1, 2}, {1, 2}, 0));
  EXPECT_TRUE(std::isnan(y.at({0, 0, 0, 0})));
  EXPECT_EQ(y.at({0, 0, 0, 1}), 4.0f);
}

// ceil_mode rounds the output size up, but PyTorch drops a last window that would start in the
// right padding. Row [3, 1, 4, 1, 5] (W = 5), kernel 2, stride 2:
TEST(ReferencePooling, CeilModeDropsAWindowStartingInThePadding) {
  // padding 1: windows start at −1, 1, 3; a 4th would start at 5 = W, inside the right padding,
  // so the output stays 3 wide (ceil((5 + 2 − 2) / 2) + 1 = 4 before the rule).
  const Tensor x = values({3, 1, 4, 1, 5}, {1, 1, 1, 5});
  EXPECT_TRUE(
      testing::all_close(reference::max_pool2d(x, max_opts({1, 2}, {1, 2}, {0, 1}, 1, true)),
                         values({3, 4, 5}, {1, 1, 1, 3}), Tolerance::exact()));
  // avg: the first window is (pad, 3) → 3/2 with padding counted, 3/1 without.
  EXPECT_TRUE(testing::all_close(reference::avg_pool2d(x, avg_opts({1, 2}, {1, 2}, {0, 1}, true)),
                                 values({1.5f, 2.5f, 3}, {1, 1, 1, 3}), Tolerance::exact()));
  EXPECT_TRUE(
      testing::all_close(reference::avg_pool2d(x, avg_opts({1, 2}, {1, 2}, {0, 1}, true, false)),
                         values({3, 2.5f, 3}, {1, 1, 1, 3}), Tolerance::exact()));
}

TEST(ReferencePooling, CeilModeKeepsAWindowStartingInTheInput) {
  // padding 0: floor gives 2 windows, ceil a 3rd starting at 4 (inside) that hangs over the end.
  // Its overhang is not padding, so even count_include_pad divides by 1.
  const Tensor x = values({3, 1, 4, 1, 5}, {1, 1, 1, 5});
  EXPECT_EQ(reference::max_pool2d(x, max_opts({1, 2}, {1, 2}, 0)).size(3), 2);
  EXPECT_TRUE(testing::all_close(reference::max_pool2d(x, max_opts({1, 2}, {1, 2}, 0, 1, true)),
                                 values({3, 4, 5}, {1, 1, 1, 3}), Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(reference::avg_pool2d(x, avg_opts({1, 2}, {1, 2}, 0, true)),
                                 values({2, 2.5f, 5}, {1, 1, 1, 3}), Tolerance::exact()));
  // Row [2, 4, 6, 8, 10, 12], kernel 3, stride 2, padding 1, ceil: windows start at −1, 1, 3, 5;
  // the last covers [5, 8) = {12, right pad, overhang}: the divisor counts the pad (2) when
  // count_include_pad, not the overhang; without it only the real element (1).
  const Tensor y = values({2, 4, 6, 8, 10, 12}, {1, 1, 1, 6});
  EXPECT_TRUE(testing::all_close(reference::avg_pool2d(y, avg_opts({1, 3}, {1, 2}, {0, 1}, true)),
                                 values({2, 6, 10, 6}, {1, 1, 1, 4}), Tolerance::exact()));
  EXPECT_TRUE(
      testing::all_close(reference::avg_pool2d(y, avg_opts({1, 3}, {1, 2}, {0, 1}, true, false)),
                         values({3, 6, 10, 12}, {1, 1, 1, 4}), Tolerance::exact()));
}

TEST(ReferencePooling, AvgCountIncludePadAndDivisorOverride) {
  // 3×3 input 1..9, kernel 3, stride 1, padding 1.
  //   1 2 3     corner window {1, 2, 4, 5} = 12, edge {1, 2, 3, 4, 5, 6} = 21, centre 45.
  //   4 5 6
  //   7 8 9
  const Tensor x = values({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
  // count_include_pad: always / 9.
  EXPECT_TRUE(testing::all_close(
      reference::avg_pool2d(x, avg_opts(3, 1, 1)),
      values({12.f / 9, 21.f / 9, 16.f / 9, 27.f / 9, 5, 33.f / 9, 24.f / 9, 39.f / 9, 28.f / 9},
             {1, 1, 3, 3}),
      Tolerance::op_f32()));
  // Without: / the number of real elements (4 at corners, 6 on edges, 9 in the centre).
  EXPECT_TRUE(testing::all_close(reference::avg_pool2d(x, avg_opts(3, 1, 1, false, false)),
                                 values({3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7}, {1, 1, 3, 3}),
                                 Tolerance::exact()));
  // divisor_override replaces both rules.
  for (bool include : {true, false}) {
    EXPECT_TRUE(
        testing::all_close(reference::avg_pool2d(x, avg_opts(3, 1, 1, false, include, 2)),
                           values({6, 10.5f, 8, 13.5f, 22.5f, 16.5f, 12, 19.5f, 14}, {1, 1, 3, 3}),
                           Tolerance::exact()));
  }
}

TEST(ReferencePooling, AdaptiveAvgNonDivisibleSizes) {
  // 7 → 3: windows [floor(7i/3), ceil(7(i+1)/3)) = [0, 3), [2, 5), [4, 7), overlapping by one.
  EXPECT_TRUE(testing::all_close(reference::adaptive_avg_pool2d(iota({1, 1, 1, 7}), {1, 3}),
                                 values({1, 3, 5}, {1, 1, 1, 3}), Tolerance::exact()));
  // 7×5 → 3×2, x[h][w] = 5h + w: rows as above, columns [0, 3), [2, 5); the mean of a window is
  // 5·(mean row) + (mean column).
  EXPECT_TRUE(testing::all_close(reference::adaptive_avg_pool2d(iota({1, 1, 7, 5}), {3, 2}),
                                 values({6, 8, 16, 18, 26, 28}, {1, 1, 3, 2}), Tolerance::exact()));
  // Output larger than input: 2 → 3 repeats, windows [0, 1), [0, 2), [1, 2).
  EXPECT_TRUE(
      testing::all_close(reference::adaptive_avg_pool2d(values({2, 4}, {1, 1, 1, 2}), {1, 3}),
                         values({2, 3, 4}, {1, 1, 1, 3}), Tolerance::exact()));
  // Global pooling keeps channels_last as PyTorch does: [N, C, 1, 1] with strides (C, 1, C, C).
  const Tensor g = reference::adaptive_avg_pool2d(randn({2, 13, 5, 5}).contiguous(CL), 1);
  EXPECT_EQ(g.strides(), (Shape{13, 1, 13, 13}));
  EXPECT_EQ(g.suggest_memory_format(), CL);
}

// Each pool run on all four layouts with odd channel counts: identical values, and a 4-d output
// in the format the input suggests.
TEST(ReferencePooling, EveryLayoutGivesTheSameValuesAndKeepsItsFormat) {
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> pools = {
      {"max k3 s2 p1 ceil",
       [](const Tensor& x) { return reference::max_pool2d(x, max_opts(3, 2, 1, 1, true)); }},
      {"max k2 d2", [](const Tensor& x) { return reference::max_pool2d(x, max_opts(2, 1, 0, 2)); }},
      {"avg k3 s2 p1 ceil excl",
       [](const Tensor& x) { return reference::avg_pool2d(x, avg_opts(3, 2, 1, true, false)); }},
      {"avg k2 s1 p1 div 3",
       [](const Tensor& x) { return reference::avg_pool2d(x, avg_opts(2, 1, 1, false, true, 3)); }},
      {"adaptive 3x2",
       [](const Tensor& x) {
         return reference::adaptive_avg_pool2d(x, {3, 2});
       }},
  };
  for (std::int64_t c : {13, 19}) {
    Generator gen(c);
    const Tensor x = randn({2, c, 7, 5}, {}, gen);
    for (const auto& [pool_name, pool] : pools) {
      const Tensor expected = pool(x);
      for (const auto& [name, input, suggests] : testing::layouts(x)) {
        SCOPED_TRACE(pool_name + " on " + name + " C=" + std::to_string(c));
        const Tensor y = pool(input);
        EXPECT_TRUE(testing::all_close(y, expected, Tolerance::exact()));
        EXPECT_TRUE(y.is_contiguous(input.suggest_memory_format()));
      }
      EXPECT_TRUE(pool(x.contiguous(CL)).is_contiguous(CL));
      EXPECT_FALSE(pool(x).is_contiguous(CL));
    }
  }
}

TEST(ReferencePooling, ThreeDimensionalInputIsOneBatch) {
  const Tensor x = randn({1, 13, 6, 5});
  const Tensor x3 = x.as_strided({13, 6, 5}, {30, 5, 1}, 0);
  const Tensor m = reference::max_pool2d(x3, max_opts(2, 2, 1));
  ASSERT_EQ(m.sizes(), (Shape{13, 4, 3}));
  EXPECT_EQ(m.to_vector(), reference::max_pool2d(x, max_opts(2, 2, 1)).to_vector());
  const Tensor a = reference::avg_pool2d(x3, avg_opts(3, 2, 1, true, false));
  EXPECT_EQ(a.to_vector(), reference::avg_pool2d(x, avg_opts(3, 2, 1, true, false)).to_vector());
  const Tensor g = reference::adaptive_avg_pool2d(x3, {4, 4});
  ASSERT_EQ(g.sizes(), (Shape{13, 4, 4}));
  EXPECT_EQ(g.to_vector(), reference::adaptive_avg_pool2d(x, {4, 4}).to_vector());
}

TEST(ReferencePooling, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // Max pooling of bf16 values is exact on the rounded inputs, but those inputs differ from the
  // fp32 ones by up to 2^-9 relative, and averages round their result once more: only the bf16
  // policy bounds that difference.
  const Tensor x = randn({2, 13, 7, 5});
  const Tensor xb = x.to(DType::BFloat16, CL);
  const Tensor m = reference::max_pool2d(xb, max_opts(3, 2, 1, 1, true));
  EXPECT_EQ(m.dtype(), DType::BFloat16);
  EXPECT_TRUE(m.is_contiguous(CL));
  EXPECT_TRUE(testing::all_close(m, reference::max_pool2d(x, max_opts(3, 2, 1, 1, true)),
                                 Tolerance::bf16()));
  EXPECT_TRUE(testing::all_close(reference::avg_pool2d(xb, avg_opts(3, 1, 1)),
                                 reference::avg_pool2d(x, avg_opts(3, 1, 1)), Tolerance::bf16()));
  EXPECT_TRUE(testing::all_close(reference::adaptive_avg_pool2d(xb, {3, 2}),
                                 reference::adaptive_avg_pool2d(x, {3, 2}), Tolerance::bf16()));
}

TEST(ReferencePooling, BFloat16AverageIsRoundedOnce) {
  // Window sum 2 + 1 + 2^-7 + 2^-8 + 2^-30 = 3 + 3·2^-8 + 2^-30 (all bf16 values), divided by 3:
  // 1 + 2^-8 + 2^-30/3, just above the bf16 tie between 1 and 1 + 2^-7. Rounding through float
  // first lands exactly on the tie (the 2^-30/3 is below float precision) and ties-to-even gives
  // 1; rounding once gives 1 + 2^-7.
  const Tensor x = from_values(std::vector<float>{2, 1, 0x1p-7f, 0x1p-8f, 0x1p-30f}, {1, 1, 1, 5},
                               {DType::BFloat16});
  const Tensor y = reference::avg_pool2d(x, avg_opts({1, 5}, 1, 0, false, true, 3));
  EXPECT_EQ(y.item(), 1.0f + 0x1p-7f);
}

TEST(ReferencePooling, BadArguments) {
  const Tensor x = ones({1, 2, 5, 5});
  MaxPool2dOptions k0;
  k0.kernel_size = 0;
  AvgPool2dOptions div0 = avg_opts(2, 2, 0);
  div0.divisor_override = 0;
  testing::expect_errors({
      {"max stride 0",
       [&] {
         return reference::max_pool2d(x, max_opts(2, {1, 0}, 0));
       },
       "max_pool2d: width: stride (0) must be positive"},
      {"avg stride 0",
       [&] {
         return reference::avg_pool2d(x, avg_opts(2, {0, 1}, 0));
       },
       "avg_pool2d: height: stride (0) must be positive"},
      {"max padding > kernel/2", [&] { return reference::max_pool2d(x, max_opts(3, 1, 2)); },
       "max_pool2d: height: padding (2) must be non-negative and at most half the kernel size (3)"},
      {"avg padding > kernel/2",
       [&] {
         return reference::avg_pool2d(x, avg_opts(2, 1, {0, 2}));
       },
       "avg_pool2d: width: padding (2) must be non-negative"},
      {"negative padding", [&] { return reference::max_pool2d(x, max_opts(2, 1, -1)); },
       "max_pool2d: height: padding (-1)"},
      {"dilation 0",
       [&] {
         return reference::max_pool2d(x, max_opts(2, 1, 0, {1, 0}));
       },
       "max_pool2d: width: dilation (0) must be positive"},
      {"kernel 0", [&] { return reference::max_pool2d(x, k0); },
       "max_pool2d: kernel_size (0, 0) must be positive"},
      {"avg kernel 0",
       [&] {
         return reference::avg_pool2d(x, avg_opts({2, 0}, 1, 0));
       },
       "avg_pool2d: kernel_size (2, 0) must be positive"},
      {"kernel larger than input", [&] { return reference::avg_pool2d(x, avg_opts(6, 1, 0)); },
       "avg_pool2d: height: output size would be <= 0"},
      {"dilated kernel larger than input",
       [&] { return reference::max_pool2d(x, max_opts(3, 1, 0, 3)); },
       "max_pool2d: height: output size would be <= 0"},
      {"divisor_override 0", [&] { return reference::avg_pool2d(x, div0); },
       "avg_pool2d: divisor_override (0) must be positive"},
      {"adaptive negative size",
       [&] {
         return reference::adaptive_avg_pool2d(x, {-1, 2});
       },
       "adaptive_avg_pool2d: output_size (-1, 2) must be non-negative"},
      {"2-d input",
       [&] {
         return reference::max_pool2d(ones({5, 5}), max_opts(2, 2, 0));
       },
       "max_pool2d: input must be 3-d [C, H, W] or 4-d [N, C, H, W], got [5, 5]"},
      {"5-d input",
       [&] {
         return reference::adaptive_avg_pool2d(ones({1, 1, 1, 5, 5}), 1);
       },
       "adaptive_avg_pool2d: input must be 3-d"},
      {"empty plane",
       [&] {
         return reference::avg_pool2d(ones({1, 2, 0, 5}), avg_opts(1, 1, 0));
       },
       "avg_pool2d: input [1, 2, 0, 5] must have non-zero channels, height and width"},
      {"undefined", [&] { return reference::max_pool2d({}, max_opts(2, 2, 0)); },
       "max_pool2d: input is undefined"},
      {"int64",
       [&] {
         return reference::avg_pool2d(zeros({1, 2, 4, 4}, {DType::Int64}), avg_opts(2, 2, 0));
       },
       "avg_pool2d: input has dtype int64"},
  });
}

}  // namespace
}  // namespace refold
