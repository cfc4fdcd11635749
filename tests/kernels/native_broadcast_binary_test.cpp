// native::broadcast_binary (Add, Sub, Mul, Div where one operand broadcasts) against the
// reference: broadcasts along rows and across them, scalars, either operand first (a reversed
// Sub and Div), x contiguous, channels_last and permuted, v a strided slice, tails off the vector
// width, 1 and 2 threads; what it declines; and functional::div running it where oneDNN has only
// its reference implementation.
#include "kernels/native/broadcast_binary.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "refold/functional.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using native::BinaryKind;

class NativeBroadcastBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }

 private:
  testing::RestoreNumThreads restore_threads_;
};

Tensor expected(BinaryKind op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case BinaryKind::Add:
      return reference::arith(a, b, reference::ArithOp::Add);
    case BinaryKind::Sub:
      return reference::arith(a, b, reference::ArithOp::Sub);
    case BinaryKind::Mul:
      return reference::arith(a, b, reference::ArithOp::Mul);
    case BinaryKind::Div:
      break;
  }
  return reference::arith(a, b, reference::ArithOp::Div);
}

TEST_F(NativeBroadcastBinary, MatchesTheReferenceExactly) {
  // x's shape, v's shape: a scalar per row, a row per matrix, per channel, a scalar, leading
  // dims missing; 19 and 13 leave vector tails; 4 × 64 × 32² runs on two threads.
  const std::vector<std::pair<Shape, Shape>> cases = {{{1, 8, 196, 16}, {1, 8, 196, 1}},
                                                      {{2, 3, 7, 19}, {2, 3, 1, 19}},
                                                      {{2, 13, 5, 3}, {1, 13, 1, 1}},
                                                      {{3, 19}, {1}},
                                                      {{4, 5, 13}, {13}},
                                                      {{4, 64, 32, 32}, {4, 64, 32, 1}},
                                                      {{2, 6, 4, 4}, {2, 1, 4, 4}}};
  Generator gen(8);
  int taken = 0;
  for (const auto& [xs, vs] : cases) {
    const Tensor base = randn(xs, {}, gen);
    // x contiguous, with its first two dims swapped in memory, and channels_last.
    Shape perm = {1, 0};
    for (std::int64_t d = 2; d < base.dim(); ++d) perm.push_back(d);
    const Tensor swapped = base.permute(perm).contiguous().permute(perm);
    const Tensor nhwc = xs.size() == 4 ? base.contiguous(MemoryFormat::ChannelsLast) : base;
    // v as itself and as a slice of a wider tensor (out[..., -1:] of a linear attention).
    Shape wide = vs;
    wide.back() += 3;
    const Tensor v_dense = functional::add(rand(vs, {}, gen), full(vs, 0.5f));
    const Tensor wide_v = functional::add(rand(wide, {}, gen), full(wide, 0.5f));
    const Tensor v_slice = wide_v.as_strided(vs, wide_v.strides(), 3);  // [..., 3:]
    for (const Tensor& x : {base, swapped, nhwc}) {
      for (const Tensor& v : {v_dense, v_slice}) {
        for (const BinaryKind op :
             {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div}) {
          for (const bool v_first : {false, true}) {
            for (const int threads : {1, 2}) {
              set_num_threads(threads);
              SCOPED_TRACE(fmt::format("op {} x {} v {} v first {} threads {}",
                                       static_cast<int>(op), x.description(), v.description(),
                                       v_first, threads));
              std::string declined;
              const Tensor y = v_first ? native::broadcast_binary(op, v, x, &declined)
                                       : native::broadcast_binary(op, x, v, &declined);
              // Every case is taken: v read along x's rows, as one value per row, or (x in
              // another layout) gathered with its own stride.
              ASSERT_TRUE(y.defined()) << declined;
              ++taken;
              EXPECT_EQ(y.strides(), x.strides());
              EXPECT_TRUE(testing::all_close(y, v_first ? expected(op, v, x) : expected(op, x, v),
                                             testing::Tolerance::exact()));
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(taken, 7 * 3 * 2 * 4 * 2 * 2);
}

// v read with a stride along x's rows (an NHWC x times an NCHW [1, C, H, 1]: MobileViTv2's
// context vector) is gathered, tails included.
TEST_F(NativeBroadcastBinary, GathersAStridedOperandAlongTheRows) {
  Generator gen(9);
  for (const std::int64_t channels : {8, 13, 64}) {
    const Tensor x = randn({1, channels, 6, 10}, {}, gen).contiguous(MemoryFormat::ChannelsLast);
    const Tensor v = randn({1, channels, 6, 1}, {}, gen);
    const Tensor wide = randn({2, 3, 8}, {}, gen);
    const Tensor every_other = wide.as_strided({2, 3, 4}, {24, 8, 2}, 0);
    for (const int threads : {1, 2}) {
      set_num_threads(threads);
      std::string declined;
      const Tensor y = native::broadcast_binary(BinaryKind::Mul, x, v, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
      EXPECT_TRUE(
          testing::all_close(y, expected(BinaryKind::Mul, x, v), testing::Tolerance::exact()));
      const Tensor z = randn({2, 3, 4}, {}, gen);
      const Tensor q = native::broadcast_binary(BinaryKind::Sub, every_other, z, &declined);
      ASSERT_FALSE(q.defined());  // the strided operand has the output's shape: x not dense
      const Tensor r = native::broadcast_binary(BinaryKind::Div, z, every_other, &declined);
      ASSERT_TRUE(r.defined()) << declined;
      EXPECT_TRUE(testing::all_close(r, expected(BinaryKind::Div, z, every_other),
                                     testing::Tolerance::exact()));
    }
  }
}

// An NCHW and an NHWC operand of one shape: the output takes the first's layout, the second is
// gathered, Sub and Div keeping their order.
TEST_F(NativeBroadcastBinary, MixedLayoutsGiveTheFirstOperandsLayout) {
  Generator gen(10);
  const Tensor nchw = randn({2, 13, 5, 6}, {}, gen);
  const Tensor nhwc = functional::add(rand({2, 13, 5, 6}, {}, gen), full({2, 13, 5, 6}, 0.5f))
                          .contiguous(MemoryFormat::ChannelsLast);
  for (const BinaryKind op : {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div}) {
    for (const bool nhwc_first : {false, true}) {
      SCOPED_TRACE(fmt::format("op {} NHWC first {}", static_cast<int>(op), nhwc_first));
      const Tensor& a = nhwc_first ? nhwc : nchw;
      const Tensor& b = nhwc_first ? nchw : nhwc;
      std::string declined;
      const Tensor y = native::broadcast_binary(op, a, b, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      EXPECT_EQ(y.strides(), a.strides());
      const Tensor want = expected(op, a, b);
      EXPECT_EQ(y.strides(), want.strides());
      EXPECT_TRUE(testing::all_close(y, want, testing::Tolerance::exact()));
    }
  }
}

// Both operands broadcast (FocalNet's [N, C, 1, 1] context times its [N, 1, H, W] gate; a
// column by a row): a is expanded first, and the result is the reference's, in either order and
// from a channels_last operand too.
TEST_F(NativeBroadcastBinary, AnOuterProductExpandsTheFirstOperand) {
  const std::vector<std::pair<Tensor, Tensor>> cases = {
      {randn({2, 24, 1, 1}), randn({2, 1, 7, 9})},
      {randn({2, 1, 7, 9}).contiguous(MemoryFormat::ChannelsLast), randn({1, 24, 1, 1})},
      {randn({3, 1}), randn({1, 4})},
      {randn({5, 1, 3}), randn({4, 1})}};
  for (const auto& [a, b] : cases) {
    for (const BinaryKind op : {BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div}) {
      std::string declined;
      const Tensor y = native::broadcast_binary(op, a, b, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      EXPECT_TRUE(testing::all_close(y, expected(op, a, b), testing::Tolerance::exact()));
    }
  }
}

TEST_F(NativeBroadcastBinary, DeclinesWhatItDoesNotTake) {
  const auto reason = [](const Tensor& a, const Tensor& b) {
    std::string why;
    EXPECT_FALSE(native::broadcast_binary(BinaryKind::Div, a, b, &why).defined());
    return why;
  };
  const Tensor x = randn({2, 3, 4});
  EXPECT_EQ(reason(x, randn({2, 3, 5})), "shapes that do not broadcast");
  EXPECT_EQ(reason(x.as_strided({2, 3, 2}, x.strides(), 0), randn({2, 3, 2})), "x is not dense");
  EXPECT_EQ(reason(x.to(DType::BFloat16), x.to(DType::BFloat16)), "not two float32 operands");
}

// A linear attention's rows divided by their own scalar: oneDNN has only its reference binary
// for it, so functional::div runs refold's loop.
TEST_F(NativeBroadcastBinary, FunctionalDivRunsItWhereOnednnHasOnlyItsReference) {
  const Tensor a = randn({1, 8, 49, 16});
  const Tensor b =
      reference::arith(rand({1, 8, 49, 1}), full({1, 8, 49, 1}, 0.5f), reference::ArithOp::Add);
  DispatchLog log;
  const Tensor y = functional::div(a, b);
  const std::vector<std::string> ran = log.take();
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran[0].rfind("div: native broadcast", 0), 0u) << ran[0];
  EXPECT_TRUE(testing::all_close(y, expected(BinaryKind::Div, a, b), testing::Tolerance::exact()));
}

}  // namespace
}  // namespace refold
