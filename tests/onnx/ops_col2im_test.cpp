// Col2Im (src/ops/col2im.cpp; torch.nn.functional.fold): ONNX's worked example, fold of
// non-overlapping blocks undoing unfold, overlapping blocks counted, the native kernel and the
// reference against a brute-force sum over every column element in 1-d, 2-d and 3-d with
// strides, dilations and pads, and the error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/ranges.h>

#include <cstdint>
#include <vector>

#include "kernels/native/col2im.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_cnn_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/graph_builder.h"

namespace refold::testing {
namespace {

using I64s = std::vector<std::int64_t>;

struct Geometry {
  I64s image, block, strides, dilations, pads;
};

OpCase col2im_case(const Geometry& g) {
  OpCase c("Col2Im", {"x", "image", "block"});
  c.opset(18).constant("image", int64s(g.image)).constant("block", int64s(g.block));
  if (!g.strides.empty()) c.ints("strides", g.strides);
  if (!g.dilations.empty()) c.ints("dilations", g.dilations);
  if (!g.pads.empty()) c.ints("pads", g.pads);
  return c;
}

// The blocks per axis, L_a = ⌊(D + pads − d·(k − 1) − 1) / s⌋ + 1, and the taps K = ∏ k_a.
struct Counts {
  I64s blocks;
  std::int64_t taps = 1, count = 1, plane = 1;
};

std::int64_t or_default(const I64s& v, std::size_t a, std::int64_t fallback) {
  return v.empty() ? fallback : v[a];
}

Counts counts(const Geometry& g) {
  const std::size_t r = g.image.size();
  Counts k;
  for (std::size_t a = 0; a < r; ++a) {
    const std::int64_t s = or_default(g.strides, a, 1), d = or_default(g.dilations, a, 1);
    const std::int64_t pads = or_default(g.pads, a, 0) + or_default(g.pads, a + r, 0);
    k.blocks.push_back((g.image[a] + pads - d * (g.block[a] - 1) - 1) / s + 1);
    k.taps *= g.block[a];
    k.count *= k.blocks.back();
    k.plane *= g.image[a];
  }
  return k;
}

// The definition, element by element: column element (n, c·K + j, l) adds to image position
// l_a·s_a − p_a + j_a·d_a per axis when that is inside the image.
Tensor brute_force(const Tensor& x, const Geometry& g) {
  const std::size_t r = g.image.size();
  const Counts k = counts(g);
  const std::int64_t channels = x.size(1) / k.taps;
  std::vector<double> sums(static_cast<std::size_t>(x.size(0) * channels * k.plane), 0.0);
  for (std::int64_t n = 0; n < x.size(0); ++n)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t j = 0; j < k.taps; ++j)
        for (std::int64_t l = 0; l < k.count; ++l) {
          std::int64_t position = 0, jr = j, lr = l, scale = 1;
          bool inside = true;
          for (std::size_t a = r; a-- > 0;) {
            const std::int64_t ja = jr % g.block[a], la = lr % k.blocks[a];
            jr /= g.block[a];
            lr /= k.blocks[a];
            const std::int64_t p = la * or_default(g.strides, a, 1) - or_default(g.pads, a, 0) +
                                   ja * or_default(g.dilations, a, 1);
            inside = inside && p >= 0 && p < g.image[a];
            position += p * scale;
            scale *= g.image[a];
          }
          if (inside)
            sums[static_cast<std::size_t>((n * channels + c) * k.plane + position)] +=
                x.at({n, c * k.taps + j, l});
        }
  Shape sizes{x.size(0), channels};
  sizes.insert(sizes.end(), g.image.begin(), g.image.end());
  Tensor y = empty(sizes, DType::Float32);
  float* p = y.data<float>();
  for (std::size_t i = 0; i < sums.size(); ++i) p[i] = static_cast<float>(sums[i]);
  return y;
}

// ONNX's example (test_col2im): 5 blocks of 1 × 5 fill a 5 × 5 image row by row.
TEST(OnnxCol2Im, WorkedExample) {
  std::vector<float> x;
  for (int j = 0; j < 5; ++j)
    for (int l = 0; l < 5; ++l) x.push_back(static_cast<float>(1 + j + 5 * l));
  const Tensor y = col2im_case({{5, 5}, {1, 5}, {}, {}, {}}).run({values(x, {1, 5, 5})});
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 5, 5}));
  std::vector<float> expected;
  for (int i = 1; i <= 25; ++i) expected.push_back(static_cast<float>(i));
  EXPECT_EQ(y.to_vector(), expected);
}

// Overlapping blocks add up: folding ones counts the blocks covering each position — for 3 × 3
// blocks at stride 1 with pad 1 over 4 × 4, 4 at the corners, 6 on the edges, 9 inside.
TEST(OnnxCol2Im, OverlappingBlocksAddUp) {
  const Tensor ones = full({1, 9, 16}, 1.0f);
  const Tensor y = col2im_case({{4, 4}, {3, 3}, {}, {}, {1, 1, 1, 1}}).run({ones});
  EXPECT_EQ(y.to_vector(), (std::vector<float>{4, 6, 6, 4, 6, 9, 9, 6, 6, 9, 9, 6, 4, 6, 6, 4}));
}

// Native and reference against the definition, through the op: contiguous columns run the
// native kernel, a transposed view the reference.
TEST(OnnxCol2Im, MatchesTheDefinition) {
  const std::vector<Geometry> cases = {
      {{28, 28}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},  // VOLO's outlook attention
      {{7, 9}, {2, 3}, {1, 2}, {2, 1}, {0, 1, 1, 0}},
      {{11}, {3}, {2}, {3}, {2, 1}},
      {{4, 5, 6}, {2, 2, 3}, {1, 2, 1}, {1, 1, 2}, {0, 1, 1, 1, 0, 2}},
      {{3, 3}, {5, 5}, {}, {}, {2, 2, 2, 2}},  // blocks mostly in the padding
  };
  std::uint64_t seed = 1;
  for (const Geometry& g : cases) {
    const Counts k = counts(g);
    const Tensor x = random({2, 3 * k.taps, k.count}, seed++);
    const Tensor expected = brute_force(x, g);
    OpCase c = col2im_case(g);
    DispatchLog log;
    EXPECT_TRUE(all_close(c.run({x}), expected, Tolerance::op_f32()))
        << fmt::format("image [{}]", fmt::join(g.image, ", "));
    EXPECT_THAT(log.take(), ::testing::Contains("col2im: native"));
    const Tensor transposed = random({2, k.count, 3 * k.taps}, seed++).permute({0, 2, 1});
    EXPECT_TRUE(all_close(c.run({transposed}), brute_force(transposed, g), Tolerance::op_f32()));
    EXPECT_THAT(log.take(), ::testing::Contains("col2im: reference"));
  }
}

// Folding non-overlapping blocks undoes their extraction: blocks of 2 × 3 at strides 2 × 3 read
// from a 4 × 6 image put every element back where it was.
TEST(OnnxCol2Im, NonOverlappingBlocksRebuildTheImage) {
  const Tensor image = iota({1, 2, 4, 6});
  // unfold: column (c·6 + j, l) = image[c, 2·(l / 2) + j / 3, 3·(l % 2) + j % 3]
  Tensor columns = empty({1, 12, 4}, DType::Float32);
  for (std::int64_t c = 0; c < 2; ++c)
    for (std::int64_t j = 0; j < 6; ++j)
      for (std::int64_t l = 0; l < 4; ++l)
        columns.set({0, c * 6 + j, l}, image.at({0, c, 2 * (l / 2) + j / 3, 3 * (l % 2) + j % 3}));
  const Tensor y = col2im_case({{4, 6}, {2, 3}, {2, 3}, {}, {}}).run({columns});
  EXPECT_TRUE(all_close(y, image, Tolerance::exact()));
}

TEST(OnnxCol2Im, Errors) {
  const Tensor x = zeros({1, 9, 16});
  expect_errors({
      {"input rank",
       [&] {
         col2im_case({{4, 4}, {3, 3}, {}, {}, {1, 1, 1, 1}}).run({zeros({9, 16})});
       },
       "Col2Im: input must be 3-d [N, C·∏block, L], got"},
      {"shape lengths",
       [&] {
         col2im_case({{4, 4}, {3}, {}, {}, {}}).module();
       },
       "image_shape [4, 4] and block_shape [3] must have the same length, at least 1"},
      {"strides length",
       [&] {
         col2im_case({{4, 4}, {3, 3}, {1}, {}, {}}).module();
       },
       "strides [1] and dilations [] must have 2 values, one per axis of image_shape [4, 4]"},
      {"pads length",
       [&] {
         col2im_case({{4, 4}, {3, 3}, {}, {}, {1, 1}}).module();
       },
       "pads [1, 1] must have 4 values (begins, then ends) for image_shape [4, 4]"},
      {"negative pad",
       [&] {
         col2im_case({{4, 4}, {3, 3}, {}, {}, {1, -1, 1, 1}}).module();
       },
       "pads must be non-negative (got [1, -1, 1, 1])"},
      {"zero stride",
       [&] {
         col2im_case({{4, 4}, {3, 3}, {0, 1}, {}, {}}).module();
       },
       "strides must be positive (got [0, 1])"},
      {"taps",
       [&] {
         col2im_case({{4, 4}, {2, 2}, {}, {}, {}}).run({x});
       },
       "Col2Im: input's dim 1 (9) must be a multiple of the block's 4 taps (block_shape [2, 2])"},
      {"blocks",
       [&] {
         col2im_case({{4, 4}, {3, 3}, {}, {}, {}}).run({x});
       },
       "Col2Im: input has 16 blocks (dim 2), image_shape [4, 4] with block_shape [3, 3] gives 4 "
       "([2, 2])"},
      {"block larger than the image",
       [&] {
         col2im_case({{2, 2}, {3, 3}, {}, {}, {}}).run({zeros({1, 9, 1})});
       },
       "Col2Im: spatial axis 0"},
  });
}

}  // namespace
}  // namespace refold::testing
