// onednn::matmul (kernels/onednn/matmul.h) against reference::matmul: batched operands of rank 3
// and 4 with batch dims that broadcast either way or are missing, sizes off the vector width;
// its declines; and that a MatMul of two runtime operands runs it in one call.
#include "kernels/onednn/matmul.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "ops/gemm.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

class OnednnMatmul : public ::testing::Test {
 private:
  testing::RestoreNumThreads restore_threads_;
};

TEST_F(OnednnMatmul, MatchesTheReference) {
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{2, 5, 7}, {2, 7, 3}},           {{1, 4, 49, 16}, {1, 4, 16, 49}},
      {{3, 1, 6, 9}, {1, 2, 9, 5}},     {{2, 3, 4, 5}, {5, 6}},
      {{4, 13, 17}, {17, 19}},          {{6, 2, 11}, {2, 3, 6, 11, 4}},
      {{1, 8, 196, 16}, {1, 8, 16, 17}}};
  Generator gen(9);
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const auto& [as, bs] : cases) {
      SCOPED_TRACE(fmt::format("[{}] x [{}], {} threads", fmt::join(as, ", "), fmt::join(bs, ", "),
                               threads));
      const Tensor a = randn(as, {}, gen), b = randn(bs, {}, gen);
      std::string declined;
      const Tensor y = onednn::matmul(a, b, 1.0f, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      const Tensor expected = reference::matmul(a, b);
      EXPECT_EQ(y.sizes(), expected.sizes());
      EXPECT_TRUE(y.is_contiguous());
      EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::op_f32()));
    }
  }
}

TEST_F(OnednnMatmul, DeclinesWhatItDoesNotTake) {
  const auto reason = [](const Tensor& a, const Tensor& b) {
    std::string why;
    EXPECT_FALSE(onednn::matmul(a, b, 1.0f, &why).defined());
    return why;
  };
  EXPECT_EQ(reason(randn({4, 5}), randn({5, 3})), "not batched matrices of 3 to 12 dims");
  // [2, 3, 4, 5] with strides (60, 1, 15, 3): no unit stride along a matrix's rows or columns.
  EXPECT_EQ(reason(randn({2, 4, 5, 3}).permute({0, 3, 1, 2}), randn({2, 3, 5, 3})),
            "an operand's matrices are neither row- nor column-major");
  EXPECT_EQ(reason(randn({2, 4, 5}), randn({3, 5, 3})), "batch dims the caller reports");
  EXPECT_EQ(reason(randn({2, 4, 5}), randn({2, 4, 3})), "inner dims the caller reports");
  EXPECT_EQ(reason(randn({2, 4, 5}).to(DType::BFloat16), randn({2, 5, 3}).to(DType::BFloat16)),
            "oneDNN matmul runs float32 only");
}

// Attention's operands as the executor hands them (graph::Op::reads_views): q and v slices of
// a fused qkv [tokens, 3, heads, dim] and kᵀ a transposed slice — read through their strides,
// no copy, in one call each.
TEST_F(OnednnMatmul, ReadsTransposedAndSlicedOperandsThroughTheirStrides) {
  const Tensor qkv = randn({1, 24, 3, 2, 8});               // batch, tokens, q/k/v, heads, dim
  const Tensor heads_first = qkv.permute({2, 0, 3, 1, 4});  // [3, 1, heads, tokens, dim]
  auto part = [&](std::int64_t i) {
    return heads_first.as_strided({1, 2, 24, 8},
                                  {heads_first.stride(1), heads_first.stride(2),
                                   heads_first.stride(3), heads_first.stride(4)},
                                  i * heads_first.stride(0));
  };
  const Tensor q = part(0), k_t = part(1).permute({0, 1, 3, 2}), v = part(2);
  ASSERT_TRUE(onednn::matmul_reads(q) && onednn::matmul_reads(k_t) && onednn::matmul_reads(v));
  DispatchLog log;
  const Tensor scores = ops::matmul(q, k_t);
  const Tensor y = ops::matmul(scores, v);
  EXPECT_EQ(log.take(), (std::vector<std::string>{"matmul: onednn", "matmul: onednn"}));
  const Tensor want_scores = reference::matmul(q.contiguous(), k_t.contiguous());
  EXPECT_TRUE(testing::all_close(scores, want_scores, testing::Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(y, reference::matmul(want_scores, v.contiguous()),
                                 testing::Tolerance::op_f32()));
}

// attn · v of a 4-d attention, v laid out channels_last (made row-major first): one call.
TEST_F(OnednnMatmul, TheMatMulOpRunsItInOneCall) {
  const Tensor attn = randn({1, 4, 20, 20});
  const Tensor v = randn({1, 4, 20, 8}).contiguous(MemoryFormat::ChannelsLast);
  DispatchLog log;
  const Tensor y = ops::matmul(attn, v);
  EXPECT_EQ(log.take(), std::vector<std::string>{"matmul: onednn"});
  EXPECT_TRUE(testing::all_close(y, reference::matmul(attn, v), testing::Tolerance::op_f32()));
}

}  // namespace
}  // namespace refold
