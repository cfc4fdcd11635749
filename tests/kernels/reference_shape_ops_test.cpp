// Reference flatten, cat, pad and pixel_shuffle: known values and index checks, output formats,
// every layout, bf16, bad arguments.
#include <gtest/gtest.h>

#include <functional>
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

// ---------------------------------------------------------------------------------------------
// flatten

TEST(ReferenceShapeOps, FlattenUsesLogicalOrderInEveryLayout) {
  const Tensor x = iota({2, 13, 3, 4});
  for (const auto& [name, input, suggests] : testing::layouts(x)) {
    SCOPED_TRACE(name);
    const Tensor y = reference::flatten(input);  // start 1, end −1
    ASSERT_EQ(y.sizes(), (Shape{2, 13 * 3 * 4}));
    EXPECT_TRUE(y.is_contiguous());
    // Logical order: element (n, k) is x's n·156 + k-th element, i.e. the value n·156 + k.
    EXPECT_TRUE(testing::all_close(y, iota({2, 156}), Tolerance::exact()));
    // A channels_last (or other non-contiguous) input must be copied, never reinterpreted.
    EXPECT_EQ(y.shares_storage(input), input.is_contiguous());
  }
}

TEST(ReferenceShapeOps, FlattenDims) {
  const Tensor x = iota({2, 3, 4, 5});
  EXPECT_EQ(reference::flatten(x, 0).sizes(), (Shape{120}));
  EXPECT_EQ(reference::flatten(x, 1, 2).sizes(), (Shape{2, 12, 5}));
  EXPECT_EQ(reference::flatten(x, -3, -2).sizes(), (Shape{2, 12, 5}));
  EXPECT_EQ(reference::flatten(x, 0, -1).sizes(), (Shape{120}));
  // Nothing to merge: the input itself, as torch.flatten returns self.
  EXPECT_TRUE(reference::flatten(x, 2, 2).is_same(x));
  // A 0-d tensor becomes 1-d.
  const Tensor scalar = full({}, 7.0f);
  EXPECT_EQ(reference::flatten(scalar, 0, -1).sizes(), (Shape{1}));
  EXPECT_EQ(reference::flatten(scalar, 0, -1).item(), 7.0f);
  // A contiguous input gives a view.
  EXPECT_TRUE(reference::flatten(x).shares_storage(x));
}

// ---------------------------------------------------------------------------------------------
// cat

TEST(ReferenceShapeOps, CatEveryDim) {
  // a = 0…, b = 1000…: cat along d puts b right after a in dimension d.
  for (std::int64_t dim : {0, 1, 2, 3, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const std::int64_t d = dim < 0 ? dim + 4 : dim;
    Shape sa{2, 3, 2, 3}, sb = sa;
    sb[d] = 4;
    const Tensor a = iota(sa), b = iota(sb, 1000);
    const Tensor y = reference::cat({a, b}, dim);
    Shape expected_sizes = sa;
    expected_sizes[d] = sa[d] + 4;
    ASSERT_EQ(y.sizes(), expected_sizes);
    for (std::int64_t i0 = 0; i0 < y.size(0); ++i0)
      for (std::int64_t i1 = 0; i1 < y.size(1); ++i1)
        for (std::int64_t i2 = 0; i2 < y.size(2); ++i2)
          for (std::int64_t i3 = 0; i3 < y.size(3); ++i3) {
            Shape idx{i0, i1, i2, i3};
            const bool from_a = idx[d] < sa[d];
            if (!from_a) idx[d] -= sa[d];
            const Tensor& src = from_a ? a : b;
            EXPECT_EQ(y.at({i0, i1, i2, i3}), src.at({idx[0], idx[1], idx[2], idx[3]}));
          }
  }
}

TEST(ReferenceShapeOps, CatThreeInputsKnownValues) {
  const Tensor y = reference::cat(
      {values({1, 2}, {1, 2}), values({3, 4, 5, 6}, {2, 2}), values({7, 8}, {1, 2})});
  EXPECT_TRUE(testing::all_close(y, values({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}), Tolerance::exact()));
  const Tensor z = reference::cat({values({1, 2}, {2, 1}), values({3, 4, 5, 6}, {2, 2})}, -1);
  EXPECT_TRUE(testing::all_close(z, values({1, 3, 4, 2, 5, 6}, {2, 3}), Tolerance::exact()));
}

TEST(ReferenceShapeOps, CatEveryLayoutAndTheOutputFormat) {
  Generator gen(1);
  const Tensor a = randn({2, 13, 3, 4}, {}, gen), b = randn({2, 19, 3, 4}, {}, gen);
  const Tensor expected = reference::cat({a, b}, 1);
  for (const auto& [name_a, in_a, suggests_a] : testing::layouts(a))
    for (const auto& [name_b, in_b, suggests_b] : testing::layouts(b)) {
      SCOPED_TRACE(name_a + " + " + name_b);
      const Tensor y = reference::cat({in_a, in_b}, 1);
      EXPECT_TRUE(testing::all_close(y, expected, Tolerance::exact()));
      // PyTorch 1.13 (cat_compute_output_memory_format): channels_last only when every input
      // suggests it; one contiguous-suggesting input makes the output contiguous.
      const bool both_cl = in_a.suggest_memory_format() == CL && in_b.suggest_memory_format() == CL;
      EXPECT_TRUE(y.is_contiguous(both_cl ? CL : MemoryFormat::Contiguous));
    }
  EXPECT_TRUE(reference::cat({a.contiguous(CL)}, 0).is_contiguous(CL));
  EXPECT_TRUE(reference::cat({iota({2, 3}), iota({2, 3})}, 0).is_contiguous());
}

// ---------------------------------------------------------------------------------------------
// pad

TEST(ReferenceShapeOps, PadAsymmetricKnownValues) {
  // Last dim (1 before, 2 after), value 9:  [1, 2] → [9, 1, 2, 9, 9].
  EXPECT_TRUE(testing::all_close(reference::pad(values({1, 2, 3, 4}, {2, 2}), {1, 2}, 9),
                                 values({9, 1, 2, 9, 9, 9, 3, 4, 9, 9}, {2, 5}),
                                 Tolerance::exact()));
  // Two dims: last (0, 1), second-last (2, 0), zero fill.
  EXPECT_TRUE(testing::all_close(reference::pad(values({1, 2, 3, 4}, {2, 2}), {0, 1, 2, 0}),
                                 values({0, 0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 0}, {4, 3}),
                                 Tolerance::exact()));
}

TEST(ReferenceShapeOps, PadNegativeCrops) {
  const Tensor x = iota({1, 4});  // [0, 1, 2, 3]
  EXPECT_TRUE(testing::all_close(reference::pad(x, {-1, 1}, 7), values({1, 2, 3, 7}, {1, 4}),
                                 Tolerance::exact()));
  EXPECT_TRUE(
      testing::all_close(reference::pad(x, {-1, -2}), values({1}, {1, 1}), Tolerance::exact()));
  // Cropping a whole dimension leaves it empty, which is allowed.
  EXPECT_EQ(reference::pad(x, {-4, 0}).sizes(), (Shape{1, 0}));
  EXPECT_EQ(reference::pad(x, {-2, -2}).sizes(), (Shape{1, 0}));
}

TEST(ReferenceShapeOps, PadEveryLayoutKeepsTheFormat) {
  Generator gen(2);
  const Tensor x = randn({2, 13, 4, 5}, {}, gen);
  const std::vector<std::int64_t> pads{1, 2, -1, 3, 0, 1};  // W (1, 2), H (−1, 3), C (0, 1)
  const Tensor expected = reference::pad(x, pads, -5);
  ASSERT_EQ(expected.sizes(), (Shape{2, 14, 6, 8}));
  for (const auto& [name, input, suggests] : testing::layouts(x)) {
    SCOPED_TRACE(name);
    const Tensor y = reference::pad(input, pads, -5);
    EXPECT_TRUE(testing::all_close(y, expected, Tolerance::exact()));
    EXPECT_TRUE(y.is_contiguous(input.suggest_memory_format()));
  }
  EXPECT_TRUE(reference::pad(x.contiguous(CL), pads).is_contiguous(CL));
}

// ---------------------------------------------------------------------------------------------
// pixel_shuffle

TEST(ReferenceShapeOps, PixelShuffleIndexMapping) {
  // out[n, c, h·r + i, w·r + j] = in[n, c·r² + i·r + j, h, w], checked at every output index.
  for (std::int64_t r : {2, 3}) {
    SCOPED_TRACE("r " + std::to_string(r));
    const std::int64_t c = 3;
    const Tensor x = iota({2, c * r * r, 2, 3});
    const Tensor y = reference::pixel_shuffle(x, r);
    ASSERT_EQ(y.sizes(), (Shape{2, c, 2 * r, 3 * r}));
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t k = 0; k < c; ++k)
        for (std::int64_t h = 0; h < 2; ++h)
          for (std::int64_t w = 0; w < 3; ++w)
            for (std::int64_t i = 0; i < r; ++i)
              for (std::int64_t j = 0; j < r; ++j)
                EXPECT_EQ(y.at({n, k, h * r + i, w * r + j}),
                          x.at({n, k * r * r + i * r + j, h, w}));
  }
  // r = 1 is the identity.
  const Tensor x = iota({1, 4, 2, 2});
  EXPECT_TRUE(testing::all_close(reference::pixel_shuffle(x, 1), x, Tolerance::exact()));
}

TEST(ReferenceShapeOps, PixelShuffleKnownValues) {
  // Four 1×1 channels become one 2×2 plane, read row by row.
  EXPECT_TRUE(testing::all_close(reference::pixel_shuffle(values({1, 2, 3, 4}, {1, 4, 1, 1}), 2),
                                 values({1, 2, 3, 4}, {1, 1, 2, 2}), Tolerance::exact()));
  // 3-d input [C·r², H, W] works too.
  EXPECT_TRUE(testing::all_close(reference::pixel_shuffle(values({1, 2, 3, 4}, {4, 1, 1}), 2),
                                 values({1, 2, 3, 4}, {1, 2, 2}), Tolerance::exact()));
}

TEST(ReferenceShapeOps, PixelShuffleEveryLayoutKeepsTheFormat) {
  Generator gen(3);
  const Tensor x = randn({2, 13 * 4, 3, 5}, {}, gen);
  const Tensor expected = reference::pixel_shuffle(x, 2);
  for (const auto& [name, input, suggests] : testing::layouts(x)) {
    SCOPED_TRACE(name);
    const Tensor y = reference::pixel_shuffle(input, 2);
    EXPECT_TRUE(testing::all_close(y, expected, Tolerance::exact()));
    EXPECT_TRUE(y.is_contiguous(input.suggest_memory_format()));
  }
  EXPECT_TRUE(reference::pixel_shuffle(x.contiguous(CL), 2).is_contiguous(CL));
}

// ---------------------------------------------------------------------------------------------
// bf16 and bad arguments

TEST(ReferenceShapeOps, BFloat16MatchesFloat32WithinBf16Tolerance) {
  // These ops only move elements, so a bf16 output equals its bf16 input exactly; against the
  // fp32 result it differs by the input's rounding to bf16 (up to 2^-9 relative), which only the
  // bf16 policy admits.
  Generator gen(4);
  const Tensor x = randn({2, 12, 3, 4}, {}, gen);
  const Tensor xb = x.to(DType::BFloat16, CL);
  const std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> ops = {
      {"flatten", [](const Tensor& t) { return reference::flatten(t); }},
      {"cat",
       [](const Tensor& t) {
         return reference::cat({t, t}, 1);
       }},
      {"pad",
       [](const Tensor& t) {
         return reference::pad(t, {1, 1, 2, 0}, 0.1f);
       }},
      {"pixel_shuffle", [](const Tensor& t) { return reference::pixel_shuffle(t, 2); }},
  };
  for (const auto& [name, op] : ops) {
    SCOPED_TRACE(name);
    const Tensor y = op(xb);
    EXPECT_EQ(y.dtype(), DType::BFloat16);
    EXPECT_TRUE(testing::all_close(y, op(x), Tolerance::bf16()));
  }
}

TEST(ReferenceShapeOps, BadArguments) {
  const Tensor x = ones({2, 3, 4, 4});
  const Tensor int64 = zeros({2, 3, 4, 4}, {DType::Int64});
  testing::expect_errors({
      {"flatten start after end", [&] { return reference::flatten(x, 2, 1); },
       "flatten: start_dim (2) cannot come after end_dim (1)"},
      {"flatten dim out of range", [&] { return reference::flatten(x, 4); },
       "flatten: start_dim (4) out of range for a 4-d tensor"},
      {"flatten int64", [&] { return reference::flatten(int64); },
       "flatten: input has dtype int64"},
      {"flatten undefined", [&] { return reference::flatten({}); }, "flatten: input is undefined"},
      {"cat empty list", [&] { return reference::cat({}); },
       "cat: expected a non-empty list of tensors"},
      {"cat mismatched dims",
       [&] {
         return reference::cat({x, ones({2, 5, 4, 3})}, 1);
       },
       "cat: input 1 has shape [2, 5, 4, 3] but input 0 has [2, 3, 4, 4]; they must match in "
       "every dimension except 1"},
      {"cat mismatched rank",
       [&] {
         return reference::cat({x, x, ones({2, 3, 4})}, 0);
       },
       "cat: input 2 has shape [2, 3, 4] but input 0 has [2, 3, 4, 4]"},
      {"cat dim out of range",
       [&] {
         return reference::cat({x, x}, -5);
       },
       "cat: dim (-5) out of range for a 4-d tensor"},
      {"cat 0-d", [&] { return reference::cat({full({}, 1.0f)}); }, "cat: input 0 is 0-d"},
      {"cat mixed dtypes",
       [&] {
         return reference::cat({x, x.to(DType::BFloat16)});
       },
       "cat: input 1 has dtype bfloat16 but input 0 has float32"},
      {"cat int64",
       [&] {
         return reference::cat({x, int64});
       },
       "cat: input 1 has dtype int64"},
      {"cat undefined",
       [&] {
         return reference::cat({x, Tensor{}});
       },
       "cat: input 1 is undefined"},
      {"pad odd length",
       [&] {
         return reference::pad(x, {1, 1, 1});
       },
       "pad: pads must have an even length (begin, end pairs), got 3"},
      {"pad too long",
       [&] {
         return reference::pad(ones({3}), {1, 1, 1, 1});
       },
       "pad: 4 pads given for a 1-d tensor (at most 2)"},
      {"pad crops below zero",
       [&] {
         return reference::pad(x, {-3, -2});
       },
       "pad: pads (-3, -2) crop dimension 3 (size 4) below zero"},
      {"pad crops more than the dim before padding",
       [&] {
         return reference::pad(ones({1, 2}), {-3, 5});
       },
       "pad: pads (-3, 5) crop dimension 1 (size 2) below zero"},
      {"pad int64",
       [&] {
         return reference::pad(int64, {1, 1});
       },
       "pad: input has dtype int64"},
      {"pixel_shuffle channels not divisible", [&] { return reference::pixel_shuffle(x, 2); },
       "pixel_shuffle: input channels (3) must be divisible by upscale_factor² (4)"},
      {"pixel_shuffle factor 0", [&] { return reference::pixel_shuffle(x, 0); },
       "pixel_shuffle: upscale_factor (0) must be positive"},
      {"pixel_shuffle 2-d",
       [&] {
         return reference::pixel_shuffle(ones({4, 4}), 2);
       },
       "pixel_shuffle: input must have at least 3 dimensions, got [4, 4]"},
      {"pixel_shuffle int64", [&] { return reference::pixel_shuffle(int64, 1); },
       "pixel_shuffle: input has dtype int64"},
  });
}

}  // namespace
}  // namespace refold
