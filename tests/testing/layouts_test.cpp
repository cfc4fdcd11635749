// The layout variants must really be what they claim: the same values, the declared strides,
// the declared suggested format, and NaN around the non-dense views.
#include "testing/layouts.h"

#include <gtest/gtest.h>

#include <cmath>

#include "testing/builders.h"
#include "testing/compare.h"

namespace refold {
namespace {

using testing::Tolerance;
constexpr auto NCHW = MemoryFormat::Contiguous;
constexpr auto CL = MemoryFormat::ChannelsLast;

TEST(TestingLayouts, EveryVariantHoldsTheSameValuesInFreshStorage) {
  const Tensor x = testing::iota({2, 5, 3, 4});
  for (const auto& variants : {testing::layouts(x), testing::conv_layouts(x)}) {
    for (const auto& [name, t, suggests] : variants) {
      SCOPED_TRACE(name);
      EXPECT_EQ(t.sizes(), x.sizes());
      EXPECT_EQ(t.dtype(), x.dtype());
      EXPECT_EQ(t.suggest_memory_format(), suggests);
      EXPECT_FALSE(t.shares_storage(x));
      EXPECT_TRUE(testing::all_close(t, x, Tolerance::exact()));
    }
  }
  const Tensor xb = x.to(DType::BFloat16);
  for (const auto& [name, t, suggests] : testing::layouts(xb)) {
    SCOPED_TRACE(name);
    EXPECT_EQ(t.dtype(), DType::BFloat16);
    EXPECT_EQ(t.to_vector(), xb.to_vector());
  }
}

TEST(TestingLayouts, StridesAreTheDeclaredOnes) {
  const Tensor x = testing::iota({2, 5, 3, 4});
  EXPECT_EQ(testing::laid_out(x, CL).strides(), (Shape{60, 1, 20, 5}));
  // Storage W, H, C, N: N is innermost.
  const Tensor whcn = testing::with_storage_order(x, {3, 2, 1, 0});
  EXPECT_EQ(whcn.strides(), (Shape{1, 2, 10, 30}));
  EXPECT_TRUE(whcn.is_non_overlapping_and_dense());
  EXPECT_FALSE(whcn.is_contiguous(NCHW) || whcn.is_contiguous(CL));
  const Tensor nhcw = testing::with_storage_order(x, {0, 2, 1, 3});
  EXPECT_EQ(nhcw.strides(), (Shape{60, 4, 20, 1}));
  // Every other element of a buffer [2, 5, 3, 8], from offset 1.
  const Tensor strided = testing::every_other_element(x);
  EXPECT_EQ(strided.strides(), (Shape{120, 24, 8, 2}));
  EXPECT_EQ(strided.storage_offset(), 1);
  EXPECT_FALSE(strided.is_non_overlapping_and_dense());
  // A window of a buffer [5, 8, 6, 7] starting at (1, 2, 1, 2).
  const Tensor window = testing::window_in_nan_buffer(x);
  EXPECT_EQ(window.strides(), (Shape{336, 42, 7, 1}));
  EXPECT_EQ(window.storage_offset(), 336 + 2 * 42 + 7 + 2);
  EXPECT_FALSE(window.is_non_overlapping_and_dense());
  EXPECT_EQ(testing::window_in_nan_buffer(x, CL).strides(), (Shape{336, 1, 56, 8}));
}

TEST(TestingLayouts, WhatTheViewsSkipIsNaN) {
  const Tensor x = testing::iota({3, 4});
  const Tensor strided = testing::every_other_element(x);
  // The element before the view's first one, and the one between its first two.
  EXPECT_TRUE(std::isnan(strided.as_strided({1}, {1}, 0).item()));
  EXPECT_TRUE(std::isnan(strided.as_strided({1}, {1}, 2).item()));
  const Tensor window = testing::window_in_nan_buffer(x);  // buffer [6, 7], window at (1, 2)
  EXPECT_TRUE(std::isnan(window.as_strided({1}, {1}, window.storage_offset() - 1).item()));
  EXPECT_TRUE(std::isnan(window.as_strided({1}, {1}, window.storage_offset() + 4).item()));
  EXPECT_FALSE(std::isnan(window.as_strided({1}, {1}, window.storage_offset() + 3).item()));
}

TEST(TestingLayouts, PreservesFormatFollowsPyTorchsRule) {
  const Tensor x = testing::iota({2, 5, 3, 4});
  const Tensor cl = testing::laid_out(x, CL);
  EXPECT_TRUE(testing::preserves_format(cl.clone(), cl));
  EXPECT_FALSE(testing::preserves_format(x, cl));
  const Tensor whcn = testing::with_storage_order(x, {3, 2, 1, 0});
  EXPECT_FALSE(testing::preserves_format(x, whcn));  // dense: strides must be kept exactly
  const Tensor strided = testing::every_other_element(x);
  EXPECT_TRUE(testing::preserves_format(x, strided));
  EXPECT_FALSE(testing::preserves_format(cl, strided));
  const Tensor cl_window = testing::window_in_nan_buffer(x, CL);
  EXPECT_TRUE(testing::preserves_format(cl, cl_window));
  EXPECT_FALSE(testing::preserves_format(x, cl_window));
}

}  // namespace
}  // namespace refold
