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
#include "kernels/reference/tensor_ops.h"
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
// no copy, in one call each. (300 tokens: products past native::kSmallMatmulFlops.)
TEST_F(OnednnMatmul, ReadsTransposedAndSlicedOperandsThroughTheirStrides) {
  const Tensor qkv = randn({1, 300, 3, 2, 8});              // batch, tokens, q/k/v, heads, dim
  const Tensor heads_first = qkv.permute({2, 0, 3, 1, 4});  // [3, 1, heads, tokens, dim]
  auto part = [&](std::int64_t i) {
    return heads_first.as_strided({1, 2, 300, 8},
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

// attn · v of a 4-d attention, v laid out channels_last (made row-major first): one call (a
// product past native::kSmallMatmulFlops).
TEST_F(OnednnMatmul, TheMatMulOpRunsItInOneCall) {
  const Tensor attn = randn({1, 4, 160, 160});
  const Tensor v = randn({1, 4, 160, 64}).contiguous(MemoryFormat::ChannelsLast);
  DispatchLog log;
  const Tensor y = ops::matmul(attn, v);
  EXPECT_EQ(log.take(), std::vector<std::string>{"matmul: onednn"});
  EXPECT_TRUE(testing::all_close(y, reference::matmul(attn, v), testing::Tolerance::op_f32()));
}

// A product read through a permutation that keeps N innermost (attention's
// (attn · v).transpose(1, 2)) or M innermost (XCiT's permute(0, 3, 1, 2)) is written straight into
// the permuted order, batch dims broadcast and operands strided; another order is permuted after.
TEST_F(OnednnMatmul, WritesTheProductInAPermutedOrder) {
  struct Case {
    Shape a, b, perm;
    bool direct;
  };
  const std::vector<Case> cases = {
      {{1, 3, 20, 20}, {1, 3, 20, 8}, {0, 2, 1, 3}, true},
      {{2, 1, 9, 5}, {1, 3, 5, 7}, {2, 0, 1, 3}, true},
      {{1, 4, 8, 8}, {1, 4, 8, 13}, {0, 3, 1, 2}, true},
      {{3, 6, 5}, {3, 5, 4}, {0, 2, 1}, true},
      {{3, 6, 5}, {5, 4}, {1, 0, 2}, true},
      {{2, 3, 6, 5}, {2, 3, 5, 4}, {0, 3, 2, 1}, false},
  };
  Generator gen(4);
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("[{}] x [{}] in order [{}], {} threads", fmt::join(c.a, ", "),
                               fmt::join(c.b, ", "), fmt::join(c.perm, ", "), threads));
      const Tensor a = randn(c.a, {}, gen);
      // b read through a transposed view: its matrices column-major.
      Shape b_t = c.b;
      std::swap(b_t[b_t.size() - 1], b_t[b_t.size() - 2]);
      Shape swap_last;
      for (std::size_t d = 0; d < c.b.size(); ++d)
        swap_last.push_back(static_cast<std::int64_t>(d));
      std::swap(swap_last[swap_last.size() - 1], swap_last[swap_last.size() - 2]);
      const Tensor b = randn(b_t, {}, gen).permute(swap_last);
      DispatchLog log;
      const Tensor z = ops::matmul(a, b, 0.5f, c.perm);
      const std::vector<std::string> dispatched = log.take();
      ASSERT_FALSE(dispatched.empty());
      EXPECT_EQ(dispatched.front() == "matmul: onednn, written permuted", c.direct)
          << fmt::format("{}", fmt::join(dispatched, "; "));
      const Tensor want = reference::transpose(reference::matmul(a, b.contiguous()), c.perm);
      EXPECT_TRUE(z.is_contiguous());
      EXPECT_EQ(z.sizes(), want.sizes());
      EXPECT_TRUE(
          testing::all_close(z, reference::arith(want, full({1}, 0.5f), reference::ArithOp::Mul),
                             testing::Tolerance::op_f32()));
    }
  }
}

TEST_F(OnednnMatmul, WritesIntoADestinationItTakes) {
  const Tensor a = randn({2, 4, 6}), b = randn({2, 6, 5});
  const Tensor want = reference::matmul(a, b);
  Tensor rows_apart = empty({2, 4, 8}).as_strided({2, 4, 5}, {32, 8, 1}, 0);
  std::string why;
  ASSERT_TRUE(onednn::matmul_into(a, b, 1.0f, rows_apart, &why)) << why;
  EXPECT_TRUE(testing::all_close(rows_apart.contiguous(), want, testing::Tolerance::op_f32()));
  Tensor column_major = empty({2, 5, 4}).permute({0, 2, 1});
  EXPECT_FALSE(onednn::matmul_into(a, b, 1.0f, column_major, &why));
  EXPECT_EQ(why, "dst's rows are not contiguous");
  Tensor wrong = empty({2, 4, 4});
  EXPECT_FALSE(onednn::matmul_into(a, b, 1.0f, wrong, &why));
  EXPECT_EQ(why, "dst is not the product's float32 [batch..., M, N]");
}

}  // namespace
}  // namespace refold
