// native::group_sum against the ops it replaces (Reshape → Mul → ReduceSum over the group axis,
// as the reference kernels compute them): both memory formats, with and without weights, weights
// per sample or shared, channel counts off the vector width, 1 and 2 threads; and its declines.
#include "kernels/native/group_sum.h"

#include <gtest/gtest.h>

#include "kernels/native/cpu.h"
#include "kernels/reference/onnx_ops.h"
#include "refold/error.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using testing::Tolerance;

// ReduceSum(Mul(Reshape(x, [N, r, C, H, W]), a), axis 1), as the exporter wrote it.
Tensor expected(const Tensor& x, const Tensor& a, std::int64_t groups) {
  const Tensor split =
      x.contiguous().view({x.size(0), groups, x.size(1) / groups, x.size(2), x.size(3)});
  const Tensor terms = a.defined() ? reference::arith(split, a, reference::ArithOp::Mul) : split;
  return reference::reduce(terms, {1}, false, reference::ReduceOp::Sum);
}

class NativeGroupSum : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }
  testing::RestoreNumThreads restore_;
};

TEST_F(NativeGroupSum, MatchesTheOpsItReplaces) {
  struct Case {
    Shape x;
    std::int64_t groups;
  };
  for (const Case& c : {Case{{1, 4, 3, 5}, 2}, Case{{2, 26, 7, 3}, 2}, Case{{1, 64, 9, 9}, 4},
                        Case{{2, 36, 5, 6}, 3}, Case{{1, 8, 1, 1}, 2}, Case{{1, 128, 40, 40}, 2}}) {
    for (const int threads : {1, 2}) {
      set_num_threads(threads);
      const std::int64_t n = c.x[0], channels = c.x[1] / c.groups;
      for (const MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
        const Tensor x = randn(c.x).contiguous(format);
        const Tensor per_sample = randn({n, c.groups, channels, 1, 1});
        const Tensor shared = randn({1, c.groups, channels, 1, 1});
        for (const Tensor& a : {Tensor(), per_sample, shared}) {
          SCOPED_TRACE(
              ::testing::Message()
              << "x " << ::testing::PrintToString(c.x) << " groups " << c.groups
              << (format == MemoryFormat::ChannelsLast ? " NHWC" : " NCHW")
              << (a.defined() ? (a.size(0) == n && n > 1 ? " per-sample a" : " shared a") : " no a")
              << ", " << threads << " threads");
          std::string declined;
          const Tensor y = native::group_sum(x, a, c.groups, &declined);
          ASSERT_TRUE(y.defined()) << declined;
          EXPECT_EQ(y.sizes(), (Shape{n, channels, c.x[2], c.x[3]}));
          EXPECT_EQ(y.suggest_memory_format(), x.suggest_memory_format());
          EXPECT_TRUE(testing::all_close(y, expected(x, a, c.groups), Tolerance::op_f32()));
        }
      }
    }
  }
}

TEST_F(NativeGroupSum, DeclinesWhatItDoesNotTake) {
  auto reason = [](const Tensor& x, const Tensor& a, std::int64_t groups) {
    std::string declined;
    EXPECT_FALSE(native::group_sum(x, a, groups, &declined).defined());
    return declined;
  };
  const Tensor x = randn({1, 8, 4, 4});
  EXPECT_EQ(reason(x.to(DType::BFloat16), Tensor(), 2), "X is not 4-d float32");
  EXPECT_EQ(reason(randn({8, 4, 4}), Tensor(), 2), "X is not 4-d float32");
  EXPECT_EQ(reason(x.permute({0, 1, 3, 2}), Tensor(), 2),
            "X is neither contiguous nor channels_last");
  EXPECT_EQ(reason(x, Tensor(), 3), "X's channels do not split into the groups");
  EXPECT_EQ(reason(x, randn({1, 2, 3, 1, 1}), 2), "A does not hold r·C values for one or every n");
  EXPECT_EQ(reason(x, randn({1, 2, 4, 1, 1}).to(DType::BFloat16), 2), "A is not float32");
  EXPECT_THROW(native::group_sum(x, Tensor(), 3, nullptr), Error);
}

}  // namespace
}  // namespace refold
