// native::few_rows_matmul against the reference matmul: 1 to 4 rows (a batch of rows too), K
// from 1 to 15, N past and inside the 64-column tile (masked tails), a strided a (copied) and a b
// whose rows are further apart than N (a column slice), both micro-kernel forms, 1 and 2
// threads; what it declines; and ops::matmul running it for CondConv's expert mixing.
#include "kernels/native/few_rows_matmul.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native_conv_testing.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "ops/gemm.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

class NativeFewRowsMatmul : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }

 private:
  testing::RestoreNumThreads restore_threads_;
};

TEST_F(NativeFewRowsMatmul, MatchesTheReference) {
  struct Case {
    Shape a;
    std::int64_t n;
    bool a_transposed = false, b_sliced = false;
  };
  const std::vector<Case> cases = {
      {{1, 4}, 1000},                  // CondConv's routing · experts
      {{2, 2, 3}, 64},                 // 4 rows in a batch, one exact tile
      {{3, 15}, 130, true},            // a read transposed, a 2-column tail
      {{1, 1, 1}, 4097, false, true},  // K = 1, b a column slice (rows 4099 apart)
      {{2, 7}, 77},
  };
  Generator gen(3);
  for (const Case& c : cases) {
    const std::int64_t k = c.a.back();
    Tensor a = randn(c.a, {}, gen);
    if (c.a_transposed) a = randn({k, c.a[0]}, {}, gen).permute({1, 0});
    const Tensor b = c.b_sliced ? randn({k, c.n + 2}, {}, gen).as_strided({k, c.n}, {c.n + 2, 1}, 1)
                                : randn({k, c.n}, {}, gen);
    const Tensor want = reference::matmul(a, b);
    for (const native::VectorIsa isa : testing::native_conv::runnable_isas()) {
      const testing::native_conv::ScopedVectorIsa capped(isa);
      for (const int threads : {1, 2}) {
        set_num_threads(threads);
        SCOPED_TRACE(fmt::format("{} · {} ISA {} threads {}", a.description(), b.description(),
                                 static_cast<int>(isa), threads));
        std::string declined;
        const Tensor y = native::few_rows_matmul(a, b, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        EXPECT_EQ(y.sizes(), want.sizes());
        EXPECT_TRUE(y.is_contiguous());
        EXPECT_TRUE(testing::all_close(y, want, testing::Tolerance::op_f32()));
      }
    }
  }
}

TEST_F(NativeFewRowsMatmul, DeclinesWhatItDoesNotTake) {
  const auto reason = [](const Tensor& a, const Tensor& b) {
    std::string why;
    EXPECT_FALSE(native::few_rows_matmul(a, b, &why).defined());
    return why;
  };
  EXPECT_EQ(reason(randn({1, 4}).to(DType::BFloat16), randn({4, 64}).to(DType::BFloat16)),
            "not two float32 operands");
  EXPECT_EQ(reason(randn({1, 4}), randn({2, 4, 64})), "not [..., K] · [K, N]");
  EXPECT_EQ(reason(randn({5, 4}), randn({4, 64})), "5 rows of K = 4: not 1 to 4");
  EXPECT_EQ(reason(randn({1, 16}), randn({16, 64})),
            "K = 16: oneDNN's blocks waste nothing from 16 on");
  EXPECT_EQ(reason(randn({1, 4}), randn({4, 63})), "N = 63 under 64");
  EXPECT_EQ(reason(randn({1, 4}), randn({64, 4}).permute({1, 0})),
            "b's strides [1, 4]: N not in unit stride");
}

// MatMul by a constant [K, N]: a few rows of small K run natively, more rows on oneDNN.
TEST_F(NativeFewRowsMatmul, MatMulRunsItForFewRowsOfSmallK) {
  const Tensor routing = randn({1, 4}), experts = randn({4, 4608});
  const Tensor many = randn({8, 4});
  DispatchLog log;
  const Tensor mixed = ops::matmul(routing, experts, 1.0f);
  const Tensor other = ops::matmul(many, experts, 2.0f);
  const std::vector<std::string> ran = log.take();
  ASSERT_GE(ran.size(), 2u);
  EXPECT_EQ(ran[0].rfind("matmul: native few rows", 0), 0u) << ran[0];
  EXPECT_EQ(ran[1].rfind("linear: onednn", 0), 0u) << ran[1];
  EXPECT_TRUE(
      testing::all_close(mixed, reference::matmul(routing, experts), testing::Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(
      other,
      reference::arith(reference::matmul(many, experts), full({}, 2.0f), reference::ArithOp::Mul),
      testing::Tolerance::op_f32()));
}

}  // namespace
}  // namespace refold
