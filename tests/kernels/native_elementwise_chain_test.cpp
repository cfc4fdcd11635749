// native::elementwise_chain: every chain of testing::post_chain_cases against the reference's
// apply_post_ops, in both layouts, over channel counts with and without an 8-lane tail and
// planes of odd size; the declines name their reason.
#include "kernels/native/elementwise_chain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kernels/native/cpu.h"
#include "kernels/post_ops.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/post_chains.h"

namespace refold {
namespace {

using ::testing::HasSubstr;
using testing::Tolerance;

TEST(NativeElementwiseChain, MatchesTheReferenceOnEveryChain) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  for (const Shape& sizes : {Shape{2, 13, 5, 3}, Shape{1, 24, 4, 4}, Shape{3, 7, 1, 9}}) {
    Generator gen(3);
    const Tensor x = randn(sizes, {}, gen);
    for (testing::PostChainCase& k : testing::post_chain_cases(sizes)) {
      const Tensor expected = reference::apply_post_ops(x, k.post);
      for (MemoryFormat layout : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
        for (int threads : {1, 2}) {
          SCOPED_TRACE(fmt::format("[{}] {} {} {} threads", fmt::join(sizes, ", "), k.name,
                                   memory_format_name(layout), threads));
          set_num_threads(threads);
          PostOps post = k.post;
          if (post.residual.defined()) post.residual = post.residual.contiguous(layout);
          std::string declined;
          const Tensor y = native::elementwise_chain(x.contiguous(layout), post, &declined);
          ASSERT_TRUE(y.defined()) << declined;
          EXPECT_TRUE(y.is_contiguous(layout));
          EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
        }
      }
    }
  }
}

TEST(NativeElementwiseChain, DeclinesWhatItDoesNotTake) {
  PostOps relu;
  relu.activation = Activation::ReLU;
  std::string declined;
  EXPECT_FALSE(native::elementwise_chain(randn({4, 5}), relu, &declined).defined());
  EXPECT_THAT(declined, HasSubstr(native::cpu_has_avx2_fma() ? "4-d" : "AVX2"));
  PostOps late = relu;
  late.residual = randn({1, 8, 3, 3}).contiguous(MemoryFormat::ChannelsLast);
  EXPECT_FALSE(native::elementwise_chain(randn({1, 8, 3, 3}), late, &declined).defined());
  if (native::cpu_has_avx2_fma()) {
    EXPECT_THAT(declined, HasSubstr("residual"));
  }
}

}  // namespace
}  // namespace refold
