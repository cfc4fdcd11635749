// native::elementwise_chain: every chain of testing::post_chain_cases against the reference's
// apply_post_ops, in both layouts, over channel counts with and without an 8-lane tail and
// planes of odd size; native::concat_chain the same against the reference's cat then chain, over
// inputs whose channel counts put the 8-lane boundaries inside and across inputs; the declines
// name their reason.
#include "kernels/native/elementwise_chain.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/post_ops.h"
#include "refold/reference.h"
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

// bfloat16 input (and residual) runs the float32 kernel between a widening and a rounding
// (bfloat16_boundary.h): the float32 chain's result within the bfloat16 tolerance, in bfloat16.
TEST(NativeElementwiseChain, Bfloat16RunsTheFloat32Kernel) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  const Shape sizes = {2, 13, 5, 3};
  Generator gen(5);
  const Tensor x = randn(sizes, {}, gen);
  for (testing::PostChainCase& k : testing::post_chain_cases(sizes)) {
    SCOPED_TRACE(k.name);
    const Tensor expected = reference::apply_post_ops(x, k.post);
    PostOps post = k.post;
    if (post.residual.defined()) post.residual = post.residual.to(DType::BFloat16);
    std::string declined;
    const Tensor y = native::elementwise_chain(x.to(DType::BFloat16), post, &declined);
    ASSERT_TRUE(y.defined()) << declined;
    EXPECT_EQ(y.dtype(), DType::BFloat16);
    EXPECT_TRUE(testing::all_close(y, expected, Tolerance::bf16()));
  }
  std::vector<Tensor> inputs = {randn({1, 5, 3, 3}, {}, gen), randn({1, 11, 3, 3}, {}, gen)};
  PostOps relu;
  relu.activation = Activation::ReLU;
  const Tensor expected = reference::apply_post_ops(reference::cat(inputs, 1), relu);
  for (Tensor& t : inputs) t = t.to(DType::BFloat16).contiguous(MemoryFormat::ChannelsLast);
  std::string declined;
  const Tensor y = native::concat_chain(inputs, relu, &declined);
  ASSERT_TRUE(y.defined()) << declined;
  EXPECT_EQ(y.dtype(), DType::BFloat16);
  EXPECT_TRUE(testing::all_close(y, expected, Tolerance::bf16()));
}

// Sigmoid and SiLU run on the vector exp (epilogue.h): within the op tolerance of the reference's
// std::exp form over the whole float range, saturating to 0 and 1 (x and 0 for SiLU) far out,
// NaN staying NaN.
TEST(NativeElementwiseChain, SigmoidAndSiluHoldOverTheWholeRange) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  std::vector<float> values;
  for (float v = -120.0f; v <= 120.0f; v += 0.37f) values.push_back(v);
  for (float v : {-1e30f, -88.9f, -87.5f, -1e-30f, 0.0f, 1e-30f, 87.5f, 88.9f, 1e30f})
    values.push_back(v);
  values.resize(values.size() / 8 * 8 + 5);  // an 8-lane tail
  values.back() = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = from_values(values, {1, static_cast<std::int64_t>(values.size()), 1, 1});
  for (Activation a : {Activation::Sigmoid, Activation::SiLU}) {
    PostOps post;
    post.activation = a;
    std::string declined;
    const Tensor y = native::elementwise_chain(x, post, &declined);
    ASSERT_TRUE(y.defined()) << declined;
    EXPECT_TRUE(testing::all_close(y, reference::apply_post_ops(x, post), Tolerance::op_f32()))
        << activation_name(a);
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

// The chain's per-channel values are indexed by the channel of the concat's output: input k's
// channel c is output channel o_k + c, whatever 8-lane boundary o_k falls on.
TEST(NativeConcatChain, MatchesTheReferenceCatThenChain) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  const std::vector<std::vector<std::int64_t>> splits = {
      {16}, {8, 8}, {5, 11, 3}, {64, 32, 32}, {1, 2, 13}};
  for (const auto& channels : splits) {
    std::int64_t total = 0;
    std::vector<Tensor> inputs;
    Generator gen(11);
    for (std::int64_t c : channels) {
      inputs.push_back(randn({2, c, 3, 5}, {}, gen).contiguous(MemoryFormat::ChannelsLast));
      total += c;
    }
    for (testing::PostChainCase& k : testing::post_chain_cases({2, total, 3, 5})) {
      if (k.post.residual.defined()) continue;  // a concat's chain has none
      const Tensor expected = reference::apply_post_ops(reference::cat(inputs, 1), k.post);
      for (int threads : {1, 2}) {
        SCOPED_TRACE(fmt::format("[{}] {} {} threads", fmt::join(channels, ", "), k.name, threads));
        set_num_threads(threads);
        std::string declined;
        const Tensor y = native::concat_chain(inputs, k.post, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
        EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
      }
    }
  }
}

TEST(NativeConcatChain, DeclinesWhatItDoesNotTake) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  PostOps relu;
  relu.activation = Activation::ReLU;
  const Tensor a = randn({1, 8, 3, 3}).contiguous(MemoryFormat::ChannelsLast);
  std::string declined;
  EXPECT_FALSE(native::concat_chain({a, randn({1, 8, 3, 3})}, relu, &declined).defined());
  EXPECT_THAT(declined, HasSubstr("channels_last"));
  EXPECT_FALSE(native::concat_chain({a, randn({1, 8, 3, 4}).contiguous(MemoryFormat::ChannelsLast)},
                                    relu, &declined)
                   .defined());
  EXPECT_THAT(declined, HasSubstr("outside the channels"));
  PostOps sum = relu;
  sum.residual = randn({1, 16, 3, 3});
  EXPECT_FALSE(native::concat_chain({a, a}, sum, &declined).defined());
  EXPECT_THAT(declined, HasSubstr("residual"));
}

}  // namespace
}  // namespace refold
