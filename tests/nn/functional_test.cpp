// functional::conv2d / conv_transpose2d: the seed's memory-format rule (activation permuted
// to the conv's format, weight never permuted per call) and argument checks.
#include <gtest/gtest.h>

#include "kernels/onednn/conv2d.h"
#include "nn/nn_test_helpers.h"
#include "refold/refold.h"
#include "testing/compare.h"

namespace refold {
namespace {

constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto NCHW = MemoryFormat::Contiguous;
using testing::throws_error;

TEST(Functional, ConvMemoryFormatIsChannelsLastWhenEitherSideIs) {
  const Tensor x = randn({2, 8, 5, 5});
  const Tensor w = randn({4, 8, 3, 3});
  EXPECT_EQ(functional::conv_memory_format(x, w), NCHW);
  EXPECT_EQ(functional::conv_memory_format(x.contiguous(CL), w), CL);
  EXPECT_EQ(functional::conv_memory_format(x, w.contiguous(CL)), CL);
  EXPECT_EQ(functional::conv_memory_format(x.contiguous(CL), w.contiguous(CL)), CL);
  // Ambiguous shapes (Note [Ambiguous memory formats]): a 1×1 kernel made channels_last is
  // contiguous in both formats and suggests contiguous, so it does not force channels_last.
  EXPECT_EQ(functional::conv_memory_format(x, randn({4, 8, 1, 1}).contiguous(CL)), NCHW);
  EXPECT_TRUE(throws_error([&] { functional::conv_memory_format(Tensor{}, w); },
                           "conv_memory_format: input is undefined"));
  EXPECT_TRUE(throws_error([&] { functional::conv_memory_format(x, Tensor{}); },
                           "conv_memory_format: weight is undefined"));
}

TEST(Functional, Conv2dPermutesTheInputOnlyAndOnlyOnce) {
  const Tensor x = randn({2, 8, 5, 5});
  const Tensor w_nchw = randn({4, 8, 3, 3});
  const Tensor w_cl = w_nchw.contiguous(CL);
  const Tensor b = randn({4});
  const Tensor expected = reference::conv2d(x, w_nchw, b);

  reset_permute_count();
  const Tensor y = functional::conv2d(x, w_cl, b);
  EXPECT_EQ(permute_count(), 1u);  // the activation, NCHW -> channels_last
  EXPECT_TRUE(y.is_contiguous(CL));
  EXPECT_TRUE(w_cl.is_contiguous(CL));  // the weight handle is untouched
  // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
  EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::op_f32()));

  // Input already channels_last: nothing to permute, whatever the weight.
  const Tensor x_cl = x.contiguous(CL);
  reset_permute_count();
  EXPECT_TRUE(functional::conv2d(x_cl, w_cl, b).is_contiguous(CL));
  EXPECT_TRUE(functional::conv2d(x_cl, w_nchw, b).is_contiguous(CL));
  EXPECT_EQ(permute_count(), 0u);

  // Both NCHW: no permute, NCHW out. The weight is never permuted per call.
  EXPECT_TRUE(functional::conv2d(x, w_nchw, b).is_contiguous());
  EXPECT_EQ(permute_count(), 0u);
}

TEST(Functional, ConvTranspose2dFollowsTheSameRule) {
  const Tensor x = randn({2, 8, 4, 4});
  const Tensor w = randn({8, 3, 3, 3});  // [in, out/groups, kh, kw]
  const ConvTranspose2dOptions options{2, 1, 1, 1, 1};
  const Tensor expected = reference::conv_transpose2d(x, w, {}, options);
  reset_permute_count();
  const Tensor y = functional::conv_transpose2d(x, w.contiguous(CL), {}, options);
  EXPECT_EQ(permute_count(), 2u);  // one for the weight made here, one for the activation
  EXPECT_TRUE(y.is_contiguous(CL));
  // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
  EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::op_f32()));
}

TEST(Functional, ConvRejectsUndefinedAndBadInputsWithTheOpName) {
  const Tensor x = randn({2, 8, 5, 5});
  const Tensor w = randn({4, 8, 3, 3});
  EXPECT_TRUE(throws_error([&] { functional::conv2d(Tensor{}, w); }, "conv2d: input is undefined"));
  EXPECT_TRUE(
      throws_error([&] { functional::conv2d(x, Tensor{}); }, "conv2d: weight is undefined"));
  EXPECT_TRUE(throws_error([&] { functional::conv_transpose2d(Tensor{}, w); },
                           "conv_transpose2d: input is undefined"));
  EXPECT_TRUE(throws_error([&] { functional::conv_transpose2d(x, Tensor{}); },
                           "conv_transpose2d: weight is undefined"));
  // A 3-d input with a channels_last weight reaches the kernel's own rank check (not a
  // layout error from the permute).
  EXPECT_TRUE(throws_error(
      [&] {
        functional::conv2d(randn({8, 5, 5}), w.contiguous(CL));
      },
      "conv2d"));
  // Mixed dtypes are the kernel's to reject; the layout step must not hide them.
  EXPECT_THROW(functional::conv2d(x.to(DType::BFloat16), w.contiguous(CL)), Error);
}

}  // namespace
}  // namespace refold

namespace refold {
namespace {

// Dispatch: oneDNN first, the reference when oneDNN declines.
TEST(FunctionalDispatch, Float32ConvsRunOnOneDnnInBothFormats) {
  onednn::clear_cache();
  const Tensor x = randn({1, 8, 6, 6});
  const Tensor w = randn({4, 8, 3, 3});
  const Tensor up_w = randn({8, 4, 3, 3});
  for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    functional::conv2d(x.contiguous(format), w, {}, {.padding = 1});
    functional::conv_transpose2d(x.contiguous(format), up_w);
  }
  const onednn::CacheStats stats = onednn::cache_stats();
  EXPECT_EQ(stats.primitive_hits + stats.primitive_misses, 4u);
  EXPECT_EQ(stats.primitives, 4u);  // one primitive per (op, layout)
}

TEST(FunctionalDispatch, DeclinedBFloat16FallsBackToTheReference) {
  if (onednn::bf16_supported()) GTEST_SKIP() << "this CPU runs bf16 convs on oneDNN";
  const Tensor x = randn({1, 8, 6, 6}).to(DType::BFloat16);
  const Tensor w = randn({4, 8, 3, 3}).to(DType::BFloat16);
  const Tensor y = functional::conv2d(x, w);
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_TRUE(testing::all_close(y, reference::conv2d(x, w), testing::Tolerance::exact()));
}

}  // namespace
}  // namespace refold
