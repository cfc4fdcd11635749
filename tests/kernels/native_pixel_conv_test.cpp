// native::pixel_conv2d (a 1×1 conv of one pixel as a matrix-vector product): against the
// reference conv and post-ops, over batches, channel counts with and without an 8-lane tail,
// every chain of testing::post_chain_cases, both layouts and both weight layouts; the declines
// name their reason; functional::conv2d picks it for a squeeze-and-excitation conv.
#include "kernels/native/pixel_conv2d.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/verbose.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "testing/compare.h"
#include "testing/post_chains.h"

namespace refold {
namespace {

using ::testing::HasSubstr;
using testing::Tolerance;

TEST(NativePixelConv, MatchesTheReferenceOnEveryChain) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  struct Case {
    std::int64_t batch, in, out;
  };
  // Outputs fewer than 8, not a multiple of 8 (a last partial block), over the parallel
  // threshold (1152 × 48 = 55 k multiply-adds), with an 8-lane channel tail or not.
  for (const Case& k : std::vector<Case>{
           {1, 96, 4}, {1, 4, 96}, {3, 13, 21}, {2, 1, 8}, {1, 1152, 48}, {2, 48, 1150}}) {
    Generator gen(9);
    const Tensor x = randn({k.batch, k.in, 1, 1}, {}, gen);
    const Tensor w = randn({k.out, k.in, 1, 1}, {}, gen);
    const Tensor b = randn({k.out}, {}, gen);
    for (testing::PostChainCase& c : testing::post_chain_cases({k.batch, k.out, 1, 1})) {
      for (const Tensor& bias : {b, Tensor()}) {
        for (MemoryFormat layout : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
          SCOPED_TRACE(fmt::format("{}x{}->{} {} {} {}", k.batch, k.in, k.out, c.name,
                                   bias.defined() ? "bias" : "no bias",
                                   memory_format_name(layout)));
          const Tensor expected =
              reference::apply_post_ops(reference::conv2d(x, w, bias, {}), c.post);
          std::string declined;
          const Tensor y = native::pixel_conv2d(
              validate_conv2d(x.contiguous(layout), w.contiguous(layout), bias, {}, c.post),
              &declined);
          ASSERT_TRUE(y.defined()) << declined;
          EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
        }
      }
    }
  }
}

TEST(NativePixelConv, DeclinesWhatItDoesNotTake) {
  const auto reason = [](const Tensor& x, const Tensor& w, Conv2dOptions o = {}) {
    std::string why;
    const Tensor y = native::pixel_conv2d(validate_conv2d(x, w, {}, o, {}), &why);
    EXPECT_FALSE(y.defined());
    return why;
  };
  if (!native::cpu_has_avx2_fma()) {
    EXPECT_EQ(reason(randn({1, 8, 1, 1}), randn({8, 8, 1, 1})), "needs AVX2 and FMA");
    return;
  }
  EXPECT_THAT(reason(randn({1, 8, 2, 2}), randn({8, 8, 1, 1})), HasSubstr("one pixel"));
  EXPECT_THAT(reason(randn({1, 8, 3, 3}), randn({8, 8, 3, 3})), HasSubstr("one pixel"));
  Conv2dOptions grouped;
  grouped.groups = 2;
  EXPECT_EQ(reason(randn({1, 8, 1, 1}), randn({8, 4, 1, 1}), grouped), "groups 1 only");
  EXPECT_EQ(
      reason(randn({1, 8, 1, 1}).to(DType::BFloat16), randn({8, 8, 1, 1}).to(DType::BFloat16)),
      "float32 only");
}

// A squeeze-and-excitation conv through the dispatch runs here, and so does a classifier head
// written as a 1×1 conv (split over the threads); a conv of two pixels runs oneDNN.
TEST(NativePixelConv, TheDispatchPicksItForAOnePixelConv) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  DispatchLog log;
  const Tensor x = randn({1, 96, 1, 1}).contiguous(MemoryFormat::ChannelsLast);
  (void)functional::conv2d(x, randn({4, 96, 1, 1}), randn({4}), {});
  EXPECT_EQ(log.take(), std::vector<std::string>{"conv2d: native pixel"});
  (void)functional::conv2d(randn({1, 1280, 1, 1}), randn({1000, 1280, 1, 1}), {}, {});
  EXPECT_EQ(log.take(), std::vector<std::string>{"conv2d: native pixel"});
  (void)functional::conv2d(randn({1, 64, 1, 2}), randn({64, 64, 1, 1}), {}, {});
  const std::vector<std::string> wider = log.take();
  ASSERT_EQ(wider.size(), 1u);
  EXPECT_THAT(wider[0], HasSubstr("conv2d: onednn"));
}

}  // namespace
}  // namespace refold
