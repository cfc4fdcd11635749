// refold::set_flush_denormal: a model run flushes subnormal operands and results to zero on the
// calling thread and on its kernels' threads, and gives every thread its own setting back.
#include "refold/subnormals.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

#include "refold/graph/graph.h"
#include "refold/nn/linear.h"
#include "refold/tensor.h"
#include "testing/graph_builder.h"
#include "testing/threads.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace refold {
namespace {

// 1e−20 · 1e−20 = 1e−40: a subnormal float (below FLT_MIN ≈ 1.2e−38).
constexpr float kSmall = 1e-20f;

class FlushDenormal : public ::testing::Test {
 protected:
  ~FlushDenormal() override { set_flush_denormal(true); }
  testing::RestoreNumThreads restore_threads_;
};

// Counts the elements that are 0 and those that are subnormal.
std::pair<std::int64_t, std::int64_t> zeros_and_subnormals(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::int64_t zeros = 0, subnormals = 0;
  for (std::int64_t i = 0; i < c.numel(); ++i) {
    const float v = c.data<float>()[i];
    zeros += v == 0.0f;
    subnormals += std::fpclassify(v) == FP_SUBNORMAL;
  }
  return {zeros, subnormals};
}

#if defined(__x86_64__)
unsigned flush_bits() { return _mm_getcsr() & ((1u << 15) | (1u << 6)); }
#endif

TEST_F(FlushDenormal, AGraphRunFlushesOnEveryThreadAndRestoresEachThreadAfter) {
  set_num_threads(2);
  testing::GraphBuilder b;
  const std::string x = b.input("x", {1, 64, 64, 64});
  b.output(b.mul(x, b.constant("c", full({1}, kSmall))));
  const Tensor in = full({1, 64, 64, 64}, kSmall);
  ASSERT_TRUE(get_flush_denormal());  // the default
  // Off first, so that the kernels' threads exist before a run sets their bits (a new thread
  // copies its creator's): every product stays subnormal.
  set_flush_denormal(false);
  EXPECT_FALSE(get_flush_denormal());
  const Tensor kept = b.graph().run({in})[0];
  EXPECT_EQ(zeros_and_subnormals(kept).second, kept.numel());
  EXPECT_NEAR(kept.contiguous().data<float>()[0] / kSmall, kSmall, 1e-4 * kSmall);
#if defined(__x86_64__)
  const unsigned before = flush_bits();
#endif
  set_flush_denormal(true);
  const Tensor flushed = b.graph().run({in})[0];
  EXPECT_EQ(zeros_and_subnormals(flushed).first, flushed.numel());
#if defined(__x86_64__)
  EXPECT_EQ(flush_bits(), before);
#endif
  // Off again: no thread of the flushed run kept its bits.
  set_flush_denormal(false);
  const Tensor again = b.graph().run({in})[0];
  EXPECT_EQ(zeros_and_subnormals(again).second, again.numel());
}

// One thread: oneDNN runs the linear, and a clang build of refold (LLVM libomp) beside Debian's
// oneDNN (GNU libgomp) has two OpenMP runtimes; the graph test above covers the kernel threads.
TEST_F(FlushDenormal, AModuleCallFlushesAndRestores) {
  set_num_threads(1);
  set_flush_denormal(false);
  // Each output: 64 products of 1e−20 · 1e−20, each subnormal, and a subnormal sum (6.4e−39).
  nn::Linear linear(nn::LinearOptions(64, 64).bias(false), full({64, 64}, kSmall), Tensor());
  const Tensor in = full({32, 64}, kSmall);
  const Tensor kept = linear(in);
  EXPECT_EQ(zeros_and_subnormals(kept).second, kept.numel());
  set_flush_denormal(true);
  const Tensor flushed = linear(in);
  EXPECT_EQ(zeros_and_subnormals(flushed).first, flushed.numel());
  set_flush_denormal(false);
  const Tensor again = linear(in);
  EXPECT_EQ(zeros_and_subnormals(again).second, again.numel());
}

}  // namespace
}  // namespace refold
