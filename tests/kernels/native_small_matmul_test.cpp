// native::small_matmul against the reference matmul: attention's shapes and the edges — M past
// and under the 6-row panel, N not a multiple of 8 (the last panel through scratch) and past
// one 32-column panel, K = 1, a transposed a (packed) and b (gathered), a broadcast batch,
// alpha ≠ 1, both micro-kernel forms, 1 and 2 threads; what it declines; ops::matmul (MatMul)
// running it for a small product and oneDNN for a large one; and the pre-packed operand
// (PackedMatrix, multiply_packed) the recurrent kernel uses.
#include "kernels/native/small_matmul.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native_conv_testing.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "ops/gemm.h"
#include "refold/functional.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

class NativeSmallMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }

 private:
  testing::RestoreNumThreads restore_threads_;
};

Tensor expected(const Tensor& a, const Tensor& b, float alpha) {
  const Tensor y = reference::matmul(a, b);
  return alpha == 1.0f ? y : reference::arith(y, full({}, alpha), reference::ArithOp::Mul);
}

struct Case {
  Shape a, b;
  bool a_transposed = false, b_transposed = false;  // stored as the last two dims swapped
  float alpha = 1.0f;
};

TEST_F(NativeSmallMatmul, MatchesTheReference) {
  const std::vector<Case> cases = {
      {{4, 49, 16}, {4, 16, 49}, true, false, 0.25f},  // EfficientViT's qᵀ·k, scaled
      {{4, 16, 49}, {4, 49, 49}, false, true},         // v · attnᵀ
      {{2, 3, 7, 7}, {2, 3, 7, 40}},                   // a row past a panel, N % 8 ≠ 0
      {{1, 13, 1}, {3, 1, 1, 24}},                     // K = 1, a batch broadcast, N % 8 = 0
      {{6, 33, 8}, {8, 64}, false, false, -1.5f},      // b without a batch
      {{2, 1, 9, 17}, {1, 4, 17, 16}},                 // both broadcast
  };
  Generator gen(11);
  for (const Case& c : cases) {
    auto operand = [&](Shape sizes, bool transposed) {
      if (!transposed) return randn(sizes, {}, gen);
      std::swap(sizes[sizes.size() - 1], sizes[sizes.size() - 2]);
      Shape perm;
      for (std::size_t d = 0; d < sizes.size(); ++d) perm.push_back(static_cast<std::int64_t>(d));
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      return randn(sizes, {}, gen).permute(perm);
    };
    const Tensor a = operand(c.a, c.a_transposed), b = operand(c.b, c.b_transposed);
    const Tensor want = expected(a, b, c.alpha);
    for (const native::VectorIsa isa : testing::native_conv::runnable_isas()) {
      const testing::native_conv::ScopedVectorIsa capped(isa);
      for (const int threads : {1, 2}) {
        set_num_threads(threads);
        SCOPED_TRACE(fmt::format("{} · {} ISA {} threads {}", a.description(), b.description(),
                                 static_cast<int>(isa), threads));
        std::string declined;
        const Tensor y = native::small_matmul(a, b, c.alpha, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        EXPECT_EQ(y.sizes(), want.sizes());
        EXPECT_TRUE(y.is_contiguous());
        EXPECT_TRUE(testing::all_close(y, want, testing::Tolerance::op_f32()));
      }
    }
  }
}

// PackedMatrix + multiply_packed (a recurrence's per-step H · Rᵀ + Rb): b given transposed as
// R is ([N, K] rows, packed through its strides), bias or none, rows and outputs apart by more
// than their width, M from 1 (one sequence) past a panel, N past a 32-column panel and not a
// multiple of 8 (the last panel through scratch), both micro-kernel forms.
TEST_F(NativeSmallMatmul, PackedOperandMatchesTheReference) {
  Generator gen(5);
  struct Sizes {
    std::int64_t m, k, n;
  };
  for (const Sizes& z : std::vector<Sizes>{{1, 48, 192}, {32, 48, 192}, {7, 5, 20}, {13, 1, 41}}) {
    const Tensor r = randn({z.n, z.k}, {}, gen);  // b = rᵀ
    const Tensor bias = randn({z.n}, {}, gen);
    const Tensor a = randn({z.m, z.k + 3}, {}, gen);  // rows lda = k + 3 apart
    const Tensor a_view = a.as_strided({z.m, z.k}, {z.k + 3, 1}, 0);
    const Tensor want = reference::arith(reference::matmul(a_view, r.permute({1, 0})), bias,
                                         reference::ArithOp::Add);
    const Tensor plain = reference::matmul(a_view, r.permute({1, 0}));
    const native::PackedMatrix packed(r.data<float>(), z.k, z.n, 1, z.k);
    for (const native::VectorIsa isa : testing::native_conv::runnable_isas()) {
      const testing::native_conv::ScopedVectorIsa capped(isa);
      SCOPED_TRACE(
          fmt::format("[{}, {}] · [{}, {}] ISA {}", z.m, z.k, z.k, z.n, static_cast<int>(isa)));
      const std::int64_t ldy = z.n + 5;
      std::vector<float> y(static_cast<std::size_t>(z.m * ldy), -7.0f);
      // The bias in an allocation of exactly N floats: a read past it is ASan's to catch (the
      // epilogue reads 8 columns at a time; N = 20 and 41 end inside a group).
      const std::vector<float> exact_bias = bias.to_vector();
      native::multiply_packed(a.data<float>(), z.m, z.k + 3, packed, exact_bias.data(), y.data(),
                              ldy);
      const auto columns = [&](const std::vector<float>& v) {
        return from_values(v, {z.m, ldy}).as_strided({z.m, z.n}, {ldy, 1}, 0);
      };
      const Tensor got = columns(y);
      EXPECT_TRUE(testing::all_close(got, want, testing::Tolerance::op_f32()));
      for (std::int64_t i = 0; i < z.m; ++i)  // the gap between rows untouched
        EXPECT_EQ(y[static_cast<std::size_t>(i * ldy + z.n)], -7.0f);
      native::multiply_packed(a.data<float>(), z.m, z.k + 3, packed, nullptr, y.data(), ldy);
      EXPECT_TRUE(testing::all_close(columns(y), plain, testing::Tolerance::op_f32()));
    }
  }
}

TEST_F(NativeSmallMatmul, DeclinesWhatItDoesNotTake) {
  const auto reason = [](const Tensor& a, const Tensor& b) {
    std::string why;
    EXPECT_FALSE(native::small_matmul(a, b, 1.0f, &why).defined());
    return why;
  };
  EXPECT_EQ(reason(randn({6, 3}).to(DType::BFloat16), randn({3, 8}).to(DType::BFloat16)),
            "not two float32 operands");
  EXPECT_EQ(reason(randn({6, 3}), randn({4, 8})), "not [..., M, K] · [..., K, N]");
  EXPECT_EQ(reason(randn({3}), randn({3, 2})), "not [..., M, K] · [..., K, N]");
  EXPECT_EQ(reason(randn({0, 6, 3}), randn({3, 8})), "no elements");
  EXPECT_EQ(reason(randn({4, 1, 64}), randn({4, 64, 197})),
            "[1, 64] · [64, 197]: fewer than 6 rows or 8 columns");
  EXPECT_EQ(reason(randn({1, 256, 196}), randn({1, 196, 1})),
            "[256, 196] · [196, 1]: fewer than 6 rows or 8 columns");
  EXPECT_EQ(reason(randn({1, 64, 64}), randn({1, 64, 65})),
            "266240 multiply-adds, past the 262144 of a small product");
}

// MatMul of two activations: a small product runs natively, a large one on oneDNN.
TEST_F(NativeSmallMatmul, MatMulRunsItForSmallProductsOnly) {
  const Tensor q = randn({4, 49, 16}), k = randn({4, 16, 49});
  const Tensor big_a = randn({4, 196, 64}), big_b = randn({4, 64, 196});
  DispatchLog log;
  const Tensor small = ops::matmul(q, k, 0.5f);
  const Tensor large = ops::matmul(big_a, big_b);
  const std::vector<std::string> ran = log.take();
  ASSERT_EQ(ran.size(), 2u);
  EXPECT_EQ(ran[0].rfind("matmul: native small", 0), 0u) << ran[0];
  EXPECT_EQ(ran[1].rfind("matmul: onednn", 0), 0u) << ran[1];
  EXPECT_TRUE(testing::all_close(small, expected(q, k, 0.5f), testing::Tolerance::op_f32()));
  EXPECT_TRUE(
      testing::all_close(large, expected(big_a, big_b, 1.0f), testing::Tolerance::op_f32()));
}

}  // namespace
}  // namespace refold
