// native::activation_pass (sigmoid, SiLU and GELU in place over a dense tensor) against the
// reference over the whole float range, in each vector width the CPU has, 1 and 2 threads; its
// decline rules; and the conv dispatch running oneDNN's conv and then the pass where the rules take
// it.
#include "kernels/native/activation_pass.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native/vector_math.h"
#include "kernels/verbose.h"
#include "native_conv_testing.h"
#include "refold/conv_algorithm.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using ::testing::HasSubstr;
using testing::Tolerance;
using testing::native_conv::ScopedConvAlgorithm;
using testing::native_conv::ScopedVectorIsa;

class NativeActivationPass : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  }

 private:
  testing::RestoreNumThreads restore_threads_;
};

// Values over the whole float range (saturating far out, NaN kept), repeated past the pass's
// parallel threshold, with a tail of 16 and of 8 lanes; as a channels_last tensor.
Tensor whole_range(std::int64_t repeats) {
  std::vector<float> values;
  for (float v = -120.0f; v <= 120.0f; v += 0.37f) values.push_back(v);
  for (float v : {-1e30f, -88.9f, -87.5f, -1e-30f, 0.0f, 1e-30f, 87.5f, 88.9f, 1e30f})
    values.push_back(v);
  values.push_back(std::numeric_limits<float>::quiet_NaN());
  const std::size_t one = values.size();
  for (std::int64_t r = 1; r < repeats; ++r)
    values.insert(values.end(), values.begin(), values.begin() + one);
  values.resize(values.size() / 16 * 16 + 13);
  const auto c = static_cast<std::int64_t>(values.size());
  return from_values(values, {1, c, 1, 1}).contiguous(MemoryFormat::ChannelsLast);
}

TEST_F(NativeActivationPass, MatchesTheReferenceOverTheWholeRange) {
  for (const std::int64_t repeats : {1, 40}) {  // one thread's worth, and a parallel pass
    const Tensor x = whole_range(repeats);
    for (const Activation a :
         {Activation::Sigmoid, Activation::SiLU, Activation::GELU, Activation::GELUTanh}) {
      PostOps post;
      post.activation = a;
      const Tensor expected = reference::apply_post_ops(x, post);
      for (const native::VectorIsa isa : testing::native_conv::runnable_isas()) {
        const ScopedVectorIsa capped(isa);
        for (const int threads : {1, 2}) {
          SCOPED_TRACE(::testing::Message()
                       << activation_name(a) << " " << native::vector_isa_name(isa) << " "
                       << threads << " threads, " << x.numel());
          set_num_threads(threads);
          Tensor y = x.clone();
          native::activation_pass(y, a);
          EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
        }
      }
    }
  }
}

TEST_F(NativeActivationPass, DeclinesWhatItDoesNotFinish) {
  PostOps silu;
  silu.activation = Activation::SiLU;
  const std::int64_t large = native::kAvx512MinElements;
  EXPECT_EQ(native::activation_pass_decline(silu, DType::Float32, large), "");
  PostOps relu = silu;
  relu.activation = Activation::ReLU;
  EXPECT_EQ(native::activation_pass_decline(relu, DType::Float32, large),
            "the activation is not sigmoid, SiLU or GELU (erf or tanh)");
  PostOps stepped = silu;
  stepped.then.push_back({.scale = {2.0f}});
  EXPECT_EQ(native::activation_pass_decline(stepped, DType::Float32, large),
            "steps after the activation");
  EXPECT_EQ(native::activation_pass_decline(silu, DType::BFloat16, large), "float32 only");
  {
    const ScopedConvAlgorithm direct(ConvAlgorithm::Direct);
    EXPECT_EQ(native::activation_pass_decline(silu, DType::Float32, large),
              "conv algorithm is 'direct'");
  }
  PostOps gelu = silu;
  gelu.activation = Activation::GELU;  // oneDNN's gelu_erf is slower at every size
  EXPECT_EQ(native::activation_pass_decline(gelu, DType::Float32, 1), "");
  gelu.activation = Activation::GELUTanh;  // and so is its gelu_tanh
  EXPECT_EQ(native::activation_pass_decline(gelu, DType::Float32, 1), "");
  const std::string small = native::activation_pass_decline(silu, DType::Float32, large - 1);
  if (native::onednn_has_avx512_convs()) {
    EXPECT_THAT(small, HasSubstr("oneDNN's AVX-512 post-op is as fast"));
  } else {
    EXPECT_EQ(small, "");
  }
}

// A conv with SiLU (and a residual before it) large enough for the rule: the dispatch runs
// oneDNN's conv and then the pass, and the result equals the reference's.
TEST_F(NativeActivationPass, TheConvDispatchRunsItAfterOneDnnsConv) {
  Generator gen(5);
  const Tensor x = randn({1, 16, 48, 48}, {}, gen).contiguous(MemoryFormat::ChannelsLast);
  const Tensor w = functional::mul(randn({96, 16, 1, 1}, {}, gen), full({1}, 0.25f));
  const Tensor b = randn({96}, {}, gen);
  PostOps post;
  post.activation = Activation::SiLU;
  post.residual = randn({1, 96, 48, 48}, {}, gen).contiguous(MemoryFormat::ChannelsLast);
  const Tensor expected = reference::apply_post_ops(reference::conv2d(x, w, b, {}), post);
  DispatchLog log;
  const Tensor y = functional::conv2d(x, w, b, {}, post);
  EXPECT_THAT(log.take(), ::testing::ElementsAre(HasSubstr("conv2d: onednn + native activation")));
  EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
}

REFOLD_TARGET_AVX2 void vector_erf(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, native::erf(_mm256_loadu_ps(x + i)));
}

REFOLD_TARGET_AVX512 void vector_erf16(const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i + 16 <= n; i += 16)
    _mm512_storeu_ps(y + i, native::erf(_mm512_loadu_ps(x + i)));
}

// vector_math.h's erf: within 4e−7 of erf (in double) over [−12, 12], in both widths; NaN
// stays NaN.
TEST_F(NativeActivationPass, VectorErfIsWithin4e7OfErf) {
  std::vector<float> x;
  for (double v = -12.0; v <= 12.0; v += 1.0 / 4096) x.push_back(static_cast<float>(v));
  x.push_back(std::numeric_limits<float>::quiet_NaN());
  x.resize(x.size() / 16 * 16 + 16, std::numeric_limits<float>::quiet_NaN());
  std::vector<float> y(x.size());
  std::vector<bool> widths = {false};
  if (native::cpu_has_avx512()) widths.push_back(true);
  for (const bool wide : widths) {
    SCOPED_TRACE(wide ? "16 lanes" : "8 lanes");
    (wide ? vector_erf16 : vector_erf)(x.data(), y.data(), x.size());
    double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(y[i])) << i;
        continue;
      }
      worst = std::max(worst, std::abs(y[i] - std::erf(static_cast<double>(x[i]))));
    }
    EXPECT_LT(worst, 4e-7);
  }
}

// A depthwise conv with GELU, small (EfficientFormerV2's last stage): oneDNN's conv, then the pass.
TEST_F(NativeActivationPass, TheConvDispatchFinishesGeluAtAnySize) {
  Generator gen(6);
  const Tensor x = randn({1, 96, 7, 7}, {}, gen).contiguous(MemoryFormat::ChannelsLast);
  const Tensor w = randn({96, 1, 3, 3}, {}, gen);
  const Tensor b = randn({96}, {}, gen);
  Conv2dOptions options;
  options.padding = 1;
  options.groups = 96;
  PostOps post;
  post.activation = Activation::GELU;
  const Tensor expected = reference::apply_post_ops(reference::conv2d(x, w, b, options), post);
  DispatchLog log;
  const Tensor y = functional::conv2d(x, w, b, options, post);
  EXPECT_THAT(log.take(), ::testing::ElementsAre(HasSubstr("conv2d: onednn + native activation")));
  EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()));
}

}  // namespace
}  // namespace refold
