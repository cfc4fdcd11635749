// refold's native clamp (kernels/native/clamp.h) against the reference's Clip and HardSigmoid:
// NCHW, NHWC, a permuted dense view and 1-d inputs (their strides kept), sizes around the
// vector width and past one chunk (several threads), one bound, both, none, bounds beyond
// float32; NaN, ±Inf and −0 as the reference gives them; the declines; and that the graph ops
// Clip and HardSigmoid run it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "kernels/native/clamp.h"
#include "kernels/native/cpu.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_cnn_helpers.h"
#include "refold/error.h"
#include "refold/tensor.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/layouts.h"
#include "testing/threads.h"

namespace refold {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using testing::Tolerance;

constexpr float kInf = std::numeric_limits<float>::infinity();

class NativeClamp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  }

 private:
  testing::RestoreNumThreads restore_threads_;
};

Tensor normal_input(const Shape& sizes) {
  Generator gen(11);
  return randn(sizes, {}, gen);
}

// The inputs every case runs on: NCHW, NHWC, a permuted view that is dense ([N, H, W, C] read as
// [N, C, H, W]), and flat tensors whose lengths end inside a vector, at one, and past a chunk.
std::vector<Tensor> inputs() {
  const Tensor x = normal_input({2, 13, 5, 7});
  return {x,
          testing::laid_out(x, MemoryFormat::ChannelsLast),
          normal_input({2, 5, 7, 13}).permute({0, 3, 1, 2}),
          normal_input({7}),
          normal_input({16}),
          normal_input({3 * 16384 + 5})};
}

TEST_F(NativeClamp, ClipMatchesTheReference) {
  const std::vector<std::pair<std::optional<double>, std::optional<double>>> bounds = {
      {-1.0, 1.0},    {0.5, std::nullopt}, {std::nullopt, -0.25}, {std::nullopt, std::nullopt},
      {1e-12, 1e300}, {-1e300, 3.0}};
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const Tensor& x : inputs()) {
      for (const auto& [lo, hi] : bounds) {
        SCOPED_TRACE(fmt::format("[{}] strides [{}], [{}, {}], {} threads",
                                 fmt::join(x.sizes(), ", "), fmt::join(x.strides(), ", "),
                                 lo.value_or(-INFINITY), hi.value_or(INFINITY), threads));
        std::string declined;
        const Tensor y = native::clamp("Clip", x, 1.0f, 0.0f, lo ? static_cast<float>(*lo) : -kInf,
                                       hi ? static_cast<float>(*hi) : kInf, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        EXPECT_EQ(y.strides(), x.strides());
        EXPECT_TRUE(testing::all_close(y, reference::clip(x, lo, hi), Tolerance::exact()));
      }
    }
  }
}

TEST_F(NativeClamp, HardSigmoidMatchesTheReference) {
  for (const Tensor& x : inputs()) {
    for (const auto& [alpha, beta] :
         {std::pair{0.2, 0.5}, std::pair{1.0 / 6.0, 0.5}, std::pair{-0.7, 0.1}}) {
      SCOPED_TRACE(fmt::format("[{}] alpha {} beta {}", fmt::join(x.sizes(), ", "), alpha, beta));
      const Tensor y = native::clamp("HardSigmoid", x, static_cast<float>(alpha),
                                     static_cast<float>(beta), 0.0f, 1.0f, nullptr);
      EXPECT_TRUE(
          testing::all_close(y, reference::hard_sigmoid(x, alpha, beta), Tolerance::op_f32()));
    }
  }
}

// NaN passes through (in the vectors and in the tail), ±Inf are clamped, −0 stays −0 when x is
// not multiplied.
TEST_F(NativeClamp, KeepsNaNInfAndNegativeZeroAsTheReference) {
  for (std::int64_t n : {8, 11}) {  // all in vectors; 3 in the scalar tail
    SCOPED_TRACE(n);
    Tensor x = normal_input({n});
    float* p = x.data<float>();
    p[0] = NAN, p[1] = INFINITY, p[2] = -INFINITY, p[3] = -0.0f;
    p[n - 1] = NAN, p[n - 2] = -INFINITY;
    const Tensor clipped = native::clamp("Clip", x, 1.0f, 0.0f, -1.0f, kInf, nullptr);
    EXPECT_TRUE(
        testing::all_close(clipped, reference::clip(x, -1.0, std::nullopt), Tolerance::exact()));
    const std::vector<float> y = clipped.to_vector();
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[n - 1]));
    EXPECT_EQ(y[1], INFINITY);
    EXPECT_EQ(y[2], -1.0f);
    EXPECT_TRUE(std::signbit(y[3]));
    const Tensor hard = native::clamp("HardSigmoid", x, 0.2f, 0.5f, 0.0f, 1.0f, nullptr);
    EXPECT_TRUE(std::isnan(hard.to_vector()[0]));
    EXPECT_TRUE(testing::all_close(hard, reference::hard_sigmoid(x, 0.2, 0.5), Tolerance::exact()));
  }
}

TEST_F(NativeClamp, DeclinesWithReasons) {
  std::string why;
  const Tensor x = normal_input({1, 8, 4, 4});
  const Tensor ints = full({1, 8, 4, 4}, 3.0f, DType::Int64);
  EXPECT_FALSE(native::clamp("Clip", ints, 1, 0, -1, 1, &why).defined());
  EXPECT_THAT(why, HasSubstr("dtype int64; only float32"));
  EXPECT_FALSE(native::clamp("Clip", x.to(DType::BFloat16), 1, 0, -1, 1, &why).defined());
  EXPECT_THAT(why, HasSubstr("dtype bfloat16"));
  EXPECT_FALSE(native::clamp("Clip", testing::every_other_element(x), 1, 0, -1, 1, &why).defined());
  EXPECT_THAT(why, HasSubstr("not dense"));
  EXPECT_THAT([&] { (void)native::clamp("Clip", ints, 1, 0, -1, 1, nullptr); },
              ::testing::ThrowsMessage<Error>(HasSubstr("Clip: native declined")));
}

// The graph ops run the native kernel for float32 and the reference for what it declines (an
// int64 Clip), with the same results.
TEST_F(NativeClamp, GraphClipAndHardSigmoidRunIt) {
  DispatchLog log;
  const Tensor x = normal_input({1, 16, 6, 6});
  testing::OpCase clip("Clip", {"x", "lo", "hi"});
  clip.constant("lo", full({}, -0.5f)).constant("hi", full({}, 0.75f));
  ASSERT_EQ(clip.module()->type_name(), "Clip");
  EXPECT_TRUE(clip.close_in_both_layouts(x, reference::clip(x, -0.5, 0.75)));
  EXPECT_THAT(log.take(), Contains("Clip: native"));
  testing::OpCase hard("HardSigmoid", {"x"});
  ASSERT_EQ(hard.module()->type_name(), "HardSigmoid");
  EXPECT_TRUE(hard.close_in_both_layouts(x, reference::hard_sigmoid(x, 0.2, 0.5)));
  EXPECT_THAT(log.take(), Contains("HardSigmoid: native"));
  testing::OpCase integers("Clip", {"x", "lo"});
  integers.constant("lo", full({}, 2.0f, DType::Int64));
  const Tensor ints = full({5}, 1.0f, DType::Int64);
  EXPECT_TRUE(
      testing::all_close(integers.run({ints}), full({5}, 2.0f, DType::Int64), Tolerance::exact()));
  EXPECT_THAT(log.take(), Contains("Clip: reference"));
}

}  // namespace
}  // namespace refold
