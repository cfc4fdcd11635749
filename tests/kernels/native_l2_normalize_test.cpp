// native::l2_normalize (src/kernels/native/l2_normalize.cpp) against the three reference ops it
// stands for, ReduceL2 → Clip(min ε) → Div: every axis of tensors of rank 1 to 5 (size-1 dims,
// lengths off the vector width and past a job's 64 columns), contiguous, channels_last, a dense
// permutation and a window with gaps between rows; XCiT's q read out of a fused qkv product;
// ε that clips and ε = 0 (a zero vector gives NaN as the Div does); 1 and 2 threads; the output's
// layout; the declines; and ops::L2Normalize's run (a layout the next op reads) and run_views.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "kernels/native/cpu.h"
#include "kernels/native/l2_normalize.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "ops/l2_normalize.h"
#include "refold/error.h"
#include "refold/threads.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/layouts.h"
#include "testing/threads.h"

namespace refold::testing {
namespace {

class NativeL2Normalize : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }
  RestoreNumThreads restore_;
};

// What an exporter writes for F.normalize.
Tensor three_ops(const Tensor& x, std::int64_t axis, float epsilon) {
  const Tensor norm = reference::reduce(x, {axis}, true, reference::ReduceOp::L2);
  return reference::arith(x, reference::clip(norm, epsilon, std::nullopt), reference::ArithOp::Div);
}

// y is dense, its dims of size > 1 in x's memory order (a channels_last x, a channels_last y).
::testing::AssertionResult in_memory_order_of(const Tensor& y, const Tensor& x) {
  if (!y.is_non_overlapping_and_dense()) return ::testing::AssertionFailure() << "not dense";
  for (std::int64_t p = 0; p < x.dim(); ++p)
    for (std::int64_t q = 0; q < x.dim(); ++q)
      if (x.size(p) > 1 && x.size(q) > 1 &&
          (x.stride(p) > x.stride(q)) != (y.stride(p) > y.stride(q)))
        return ::testing::AssertionFailure()
               << fmt::format("strides [{}] of x [{}]", fmt::join(y.strides(), ", "),
                              fmt::join(x.strides(), ", "));
  return ::testing::AssertionSuccess();
}

// The dense layouts every axis must be taken in.
std::vector<LayoutVariant> dense_layouts(const Tensor& x) {
  if (x.dim() != 4) return {{"contiguous", x, MemoryFormat::Contiguous}};
  return {{"contiguous", x, MemoryFormat::Contiguous},
          {"channels_last", laid_out(x, MemoryFormat::ChannelsLast), MemoryFormat::ChannelsLast},
          {"permuted", with_storage_order(x, {0, 3, 1, 2}), MemoryFormat::Contiguous}};
}

TEST_F(NativeL2Normalize, EveryAxisOfEveryDenseLayoutMatchesTheThreeOps) {
  Generator gen(41);
  const std::vector<Shape> shapes = {
      {13},         {3, 100},       {5, 1},       {2, 9, 33},      {2, 130, 3},
      {2, 3, 5, 7}, {1, 16, 4, 37}, {1, 7, 1, 9}, {1, 2, 3, 4, 5}, {2, 64, 33, 17}};
  for (const int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Shape& sizes : shapes) {
      const Tensor x = uniform(sizes, 1.0, gen);
      const auto rank = static_cast<std::int64_t>(sizes.size());
      for (const auto& [name, input, format] : dense_layouts(x)) {
        for (std::int64_t axis = -rank; axis < rank; ++axis) {
          for (const float epsilon : {0.0f, 1e-12f, 0.5f}) {
            SCOPED_TRACE(fmt::format("[{}] {} axis {} ε {} {} threads", fmt::join(sizes, ", "),
                                     name, axis, epsilon, threads));
            std::string declined;
            const Tensor y = native::l2_normalize(input, axis, epsilon, &declined);
            ASSERT_TRUE(y.defined()) << declined;
            EXPECT_TRUE(all_close(y, three_ops(input, axis, epsilon), Tolerance::op_f32()));
            EXPECT_TRUE(in_memory_order_of(y, input));
          }
        }
      }
    }
  }
}

// A window inside a NaN-filled buffer (gaps between rows): taken wherever the dims below the
// axis are one contiguous run, declined by name elsewhere, and never reads a NaN.
TEST_F(NativeL2Normalize, AWindowWithGapsIsReadWhereItLies) {
  Generator gen(42);
  const Tensor x = uniform({2, 16, 4, 37}, 1.0, gen);
  int taken = 0;
  for (const MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    const Tensor window = window_in_nan_buffer(x, format);
    for (std::int64_t axis = 0; axis < 4; ++axis) {
      SCOPED_TRACE(fmt::format("{} axis {}", memory_format_name(format), axis));
      std::string declined;
      const Tensor y = native::l2_normalize(window, axis, 1e-12f, &declined);
      if (!y.defined()) {
        EXPECT_NE(declined.find("contiguous run"), std::string::npos) << declined;
        continue;
      }
      ++taken;
      EXPECT_TRUE(all_close(y, three_ops(x, axis, 1e-12f), Tolerance::op_f32()));
    }
  }
  // The innermost dim in memory (rows) and the one above it (columns), in both layouts.
  EXPECT_EQ(taken, 4);
}

// XCiT: qkv [B, N, 3·h·d] viewed as [B, N, 3, h, d], permuted to [3, B, h, N, d]; q is the
// first, transposed to [B, h, d, N] and normalized over the tokens N, which lie 3·h·d floats
// apart. The kernel reads the view and writes [B, N, h, d] in memory.
TEST_F(NativeL2Normalize, XcitsQueryIsNormalizedOverTheTokensWithoutACopy) {
  Generator gen(43);
  const std::int64_t n = 197, heads = 4, d = 32;
  const Tensor qkv = uniform({1, n, 3 * heads * d}, 1.0, gen);
  const Tensor q = qkv.view({1, n, 3, heads, d})
                       .permute({2, 0, 3, 1, 4})
                       .as_strided({1, heads, d, n}, {n * 3 * heads * d, d, 1, 3 * heads * d}, 0);
  std::string declined;
  const Tensor y = native::l2_normalize(q, -1, 1e-12f, &declined);
  ASSERT_TRUE(y.defined()) << declined;
  EXPECT_EQ(y.stride(1), d);
  EXPECT_EQ(y.stride(2), 1);
  EXPECT_EQ(y.stride(3), heads * d);
  EXPECT_TRUE(all_close(y, three_ops(q.contiguous(), -1, 1e-12f), Tolerance::op_f32()));
}

// A zero vector: ε = 0 gives 0/0 = NaN, as the Div does; ε > 0 gives zeros. ε above a vector's
// norm divides by ε.
TEST_F(NativeL2Normalize, EpsilonBoundsTheNormAsClipDoes) {
  const Tensor x = values({0, 0, 0, 3, 4, 0, 1e-3f, 0, 0}, {3, 3});
  for (const float epsilon : {0.0f, 1e-12f, 0.5f}) {
    SCOPED_TRACE(epsilon);
    const Tensor y = native::l2_normalize(x, 1, epsilon, nullptr);
    EXPECT_TRUE(all_close(y, three_ops(x, 1, epsilon), Tolerance::op_f32()));
    EXPECT_EQ(std::isnan(y.at({0, 0})), epsilon == 0.0f);
    EXPECT_FLOAT_EQ(y.at({1, 0}), 0.6f);
    EXPECT_FLOAT_EQ(y.at({2, 0}), epsilon == 0.5f ? 2e-3f : 1.0f);
  }
}

TEST_F(NativeL2Normalize, DeclinesWhatItCannotReadWithAReason) {
  Generator gen(44);
  const Tensor x = uniform({2, 3, 8}, 1.0, gen);
  const auto reason = [](const Tensor& t, std::int64_t axis) {
    std::string declined;
    EXPECT_FALSE(native::l2_normalize(t, axis, 0.0f, &declined).defined());
    return declined;
  };
  EXPECT_EQ(reason(x.to(DType::BFloat16), 2), "X is not float32");
  EXPECT_EQ(reason(x, 3), "the axis is outside X's dims");
  EXPECT_EQ(reason(empty({2, 0, 8}), 2), "X has no elements");
  EXPECT_EQ(reason(x.as_strided({2, 3, 8}, {24, 0, 1}, 0), 2),
            "a dim of X is broadcast or reversed");
  EXPECT_EQ(reason(every_other_element(x), 2),
            "the axis is strided and no dim below it is contiguous");
  EXPECT_EQ(reason(every_other_element(x), 1),
            "the dims below the axis in memory are not one contiguous run");
  EXPECT_THROW(native::l2_normalize(x, 3, 0.0f, nullptr), Error);
}

// The op: run() hands the next op a layout it reads (contiguous, or channels_last kept);
// run_views() leaves the output in the input's memory order. Both run the native kernel.
TEST_F(NativeL2Normalize, TheOpWritesALayoutItsReaderTakes) {
  Generator gen(45);
  const Tensor qkv = uniform({1, 49, 3 * 64}, 1.0, gen);
  const Tensor k = qkv.view({1, 49, 3, 2, 32})
                       .permute({2, 0, 3, 1, 4})
                       .as_strided({1, 2, 32, 49}, {49 * 192, 32, 1, 192}, 64);
  ops::L2Normalize op(-1, 1e-12f);
  const Tensor expected = three_ops(k.contiguous(), -1, 1e-12f);
  DispatchLog log;
  const Tensor dense = op.run({k})[0];
  EXPECT_TRUE(dense.is_contiguous());
  EXPECT_TRUE(all_close(dense, expected, Tolerance::op_f32()));
  std::vector<Tensor> inputs = {k};
  const Tensor view = op.run_views(inputs)[0];
  EXPECT_FALSE(view.is_contiguous());
  EXPECT_TRUE(all_close(view, expected, Tolerance::op_f32()));
  const Tensor image = laid_out(uniform({1, 8, 5, 5}, 1.0, gen), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(op.run({image})[0].is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_EQ(log.take(), (std::vector<std::string>(3, "L2Normalize: native")));
  // bfloat16: the three reference ops.
  EXPECT_TRUE(all_close(op.run({k.to(DType::BFloat16)})[0].to(DType::Float32), expected,
                        Tolerance::bf16()));
}

}  // namespace
}  // namespace refold::testing
