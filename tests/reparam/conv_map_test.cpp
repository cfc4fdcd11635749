// The conv-map algebra of the general re-parameterization pass (src/reparam/conv_map.h), each
// operation against running its operands one after the other with the reference convolution,
// over many geometries and input sizes (odd and even, so that every floor in the output-size
// formula is exercised).
#include "reparam/conv_map.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "refold/error.h"
#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"

namespace refold {
namespace {

using reparam::ConvMap;

ConvMap random_map(std::int64_t in, std::int64_t out, std::int64_t groups, Size2d kernel,
                   Size2d stride, Pads2d pads, Size2d dilation, Generator& gen) {
  reparam::ConvKernel k;
  k.groups = groups;
  k.weight = testing::uniform({out, in / groups, kernel.h, kernel.w}, 1, gen);
  return reparam::conv_map(k, stride, pads, dilation);
}

// The map run by the reference conv (pads must be ≥ 0).
Tensor run(const ConvMap& m, const Tensor& x) {
  Conv2dOptions o;
  o.stride = m.stride;
  o.padding = Padding2d::asymmetric(m.pads.top, m.pads.left, m.pads.bottom, m.pads.right);
  o.dilation = m.dilation;
  o.groups = m.groups;
  return reference::conv2d(x, reparam::to_kernel(m, {}, DType::Float32).weight, {}, o);
}

void expect_same(const Tensor& merged, const Tensor& chained) {
  ASSERT_EQ(merged.sizes(), chained.sizes());
  EXPECT_TRUE(testing::model_close(merged, chained));
}

// conv2 ∘ conv1 with conv2 unpadded: any kernels, strides, dilations, groups.
TEST(ConvMap, ThenComposesAnyUnpaddedSecondConv) {
  Generator gen(1);
  int cases = 0;
  for (std::int64_t k1 : {1, 3})
    for (std::int64_t s1 : {1, 2})
      for (std::int64_t d1 : {1, 2})
        for (std::int64_t k2 : {1, 2, 3})
          for (std::int64_t s2 : {1, 2})
            for (std::int64_t g : {1, 2}) {
              SCOPED_TRACE(::testing::Message() << "k1 " << k1 << " s1 " << s1 << " d1 " << d1
                                                << " k2 " << k2 << " s2 " << s2 << " g " << g);
              const ConvMap a = random_map(4, 6, g, k1, s1, {1, 0, 0, 1}, d1, gen);
              const ConvMap b = random_map(6, 4, g, {k2, 1}, s2, {}, 1, gen);
              const ConvMap ab = reparam::then(a, b);
              EXPECT_EQ(reparam::then_macs(a, b), ab.macs());  // without composing
              for (std::int64_t h : {11, 12}) {
                const Tensor x = testing::uniform({1, 4, h, h + 1}, 1, gen);
                expect_same(run(ab, x), run(b, run(a, x)));
              }
              ++cases;
            }
  EXPECT_EQ(cases, 96);
}

// then_macs is the composed map's size on the shortcuts too: a per-channel scale on either
// side, and a depthwise window into a dense 1×1 (groups gcd(C, 1) = 1).
TEST(ConvMap, ThenMacsIsTheComposedSize) {
  Generator gen(5);
  const ConvMap window = random_map(8, 8, 8, 7, 1, {3, 3, 3, 3}, 1, gen);
  const ConvMap dense = random_map(8, 24, 1, 1, 1, {}, 1, gen);
  const ConvMap scale = random_map(8, 8, 8, 1, 1, {}, 1, gen);
  for (const auto& [first, second] :
       {std::pair{window, dense}, std::pair{scale, dense}, std::pair{window, scale}}) {
    EXPECT_EQ(reparam::then_macs(first, second), reparam::then(first, second).macs());
  }
  EXPECT_EQ(reparam::then_macs(window, dense), 24.0 * 8 * 49);
}

// A padded conv after a 1×1 map whose constant part is 0: the padding moves onto x, scaled by
// the 1×1's stride.
TEST(ConvMap, ThenMovesPaddingInFrontOfAOneByOne) {
  Generator gen(2);
  for (std::int64_t s1 : {1, 2})
    for (std::int64_t g : {1, 4}) {
      SCOPED_TRACE(::testing::Message() << "s1 " << s1 << " g " << g);
      const ConvMap a = random_map(4, 8, g, 1, s1, {}, 1, gen);
      const ConvMap b = random_map(8, 4, g, 3, 1, {1, 2, 0, 1}, {1, 2}, gen);
      const ConvMap ab = reparam::then(a, b);
      for (std::int64_t h : {7, 8}) {
        const Tensor x = testing::uniform({2, 4, h, h}, 1, gen);
        expect_same(run(ab, x), run(b, run(a, x)));
      }
    }
}

// Zero padding after a map with a window, or after a crop on that side, is not exact.
TEST(ConvMap, PaddingAfterAWindowOrACropThrows) {
  Generator gen(3);
  const ConvMap window = random_map(4, 4, 1, 3, 1, {1, 1, 1, 1}, 1, gen);
  EXPECT_THROW(reparam::padded(window, {1, 0, 0, 0}), Error);
  const ConvMap cropped = reparam::padded(random_map(4, 4, 1, 1, 1, {}, 1, gen), {0, -1, 0, 0});
  EXPECT_THROW(reparam::padded(cropped, {0, 1, 0, 0}), Error);
  EXPECT_NO_THROW(reparam::padded(cropped, {1, 0, 0, 0}));
}

// A crop (negative pads) is exact after any map: the map reads x from further in.
TEST(ConvMap, CropAfterAnyMap) {
  Generator gen(4);
  const ConvMap a = random_map(3, 5, 1, 3, 2, {2, 2, 2, 2}, 1, gen);
  const ConvMap cropped = reparam::padded(a, {-1, 0, 0, -1});
  const Tensor x = testing::uniform({1, 3, 13, 12}, 1, gen);
  const Tensor full = run(a, x).contiguous();
  // full[:, :, 1:, :-1]
  Tensor expected = empty({1, 5, full.size(2) - 1, full.size(3) - 1});
  for (std::int64_t c = 0; c < 5; ++c)
    for (std::int64_t i = 0; i < expected.size(2); ++i)
      for (std::int64_t j = 0; j < expected.size(3); ++j)
        expected.data<float>()[(c * expected.size(2) + i) * expected.size(3) + j] =
            full.data<float>()[(c * full.size(2) + i + 1) * full.size(3) + j];
  expect_same(run(cropped, x), expected);
}

// a + b: any two windows with one stride and equal output sizes, on one dilation grid.
TEST(ConvMap, PlusAlignsWindowsOnOneGrid) {
  Generator gen(5);
  struct Case {
    Size2d ka, da;
    Pads2d pa;
    Size2d kb, db;
    Pads2d pb;
    std::int64_t ga, gb, stride;
  };
  const std::vector<Case> cases = {
      {3, 1, {1, 1, 1, 1}, 1, 1, {}, 1, 1, 1},                      // RepVGG
      {3, 1, {1, 1, 1, 1}, {1, 3}, 1, {0, 1, 0, 1}, 1, 1, 2},       // ACNet
      {3, 2, {2, 2, 2, 2}, 1, 1, {}, 2, 1, 1},                      // dilated + 1×1, groups
      {3, 2, {2, 2, 2, 2}, 3, 1, {1, 1, 1, 1}, 1, 1, 1},            // dilations 2 and 1
      {3, 1, {2, 1, 0, 1}, 1, 1, {}, 1, 1, 1},                      // off-centre
      {{5, 3}, 1, {2, 1, 2, 1}, {3, 5}, 1, {1, 2, 1, 2}, 4, 2, 2},  // asymmetric kernels
      {2, 1, {0, 0, 1, 1}, 3, 1, {1, 1, 1, 1}, 1, 1, 1},            // even kernel
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << "case " << (&c - cases.data()));
    const ConvMap a = random_map(4, 4, c.ga, c.ka, c.stride, c.pa, c.da, gen);
    const ConvMap b = random_map(4, 4, c.gb, c.kb, c.stride, c.pb, c.db, gen);
    const ConvMap sum = reparam::plus(a, b);
    for (std::int64_t h : {9, 10}) {
      const Tensor x = testing::uniform({1, 4, h, h + 3}, 1, gen);
      expect_same(run(sum, x), reference::add(run(a, x), run(b, x)));
    }
  }
}

TEST(ConvMap, PlusRefusesDifferentStridesOrOutputSizes) {
  Generator gen(6);
  const ConvMap a = random_map(4, 4, 1, 3, 1, {1, 1, 1, 1}, 1, gen);
  EXPECT_THROW(reparam::plus(a, random_map(4, 4, 1, 1, 2, {}, 1, gen)), Error);
  EXPECT_THROW(reparam::plus(a, random_map(4, 4, 1, 3, 1, {}, 1, gen)), Error);
}

// Depthwise + identity stays depthwise; dense + depthwise is dense until compact_groups finds
// that it is block-diagonal again.
TEST(ConvMap, GroupsAreKeptAndRecovered) {
  Generator gen(7);
  const ConvMap dw = random_map(6, 6, 6, 3, 1, {1, 1, 1, 1}, 1, gen);
  EXPECT_EQ(reparam::plus(dw, reparam::identity_map(6)).groups, 6);
  const ConvMap dense = reparam::regrouped(dw, 1);
  EXPECT_EQ(dense.groups, 1);
  const ConvMap back = reparam::compact_groups(dense);
  EXPECT_EQ(back.groups, 6);
  const Tensor x = testing::uniform({1, 6, 7, 7}, 1, gen);
  expect_same(run(dense, x), run(dw, x));
  expect_same(run(back, x), run(dw, x));
}

// What a map makes of a constant input, per channel: Σ over its taps.
TEST(ConvMap, ApplyToConstantMatchesAConstantImage) {
  Generator gen(8);
  const ConvMap m = random_map(4, 6, 2, 3, 1, {}, 1, gen);
  const std::vector<double> value = {0.5, -1, 2, 0.25};
  Tensor x = empty({1, 4, 5, 5});
  for (std::int64_t c = 0; c < 4; ++c)
    for (std::int64_t i = 0; i < 25; ++i)
      x.data<float>()[c * 25 + i] = static_cast<float>(value[static_cast<std::size_t>(c)]);
  const Tensor y = run(m, x);
  const std::vector<double> out = reparam::apply_to_constant(m, value);
  for (std::int64_t o = 0; o < 6; ++o)
    EXPECT_NEAR(y.data<float>()[o * 9 + 4], out[static_cast<std::size_t>(o)], 1e-5) << o;
}

}  // namespace
}  // namespace refold
