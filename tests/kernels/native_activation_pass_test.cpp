// native::activation_pass (sigmoid and SiLU in place over a dense tensor) against the reference
// over the whole float range, in each vector width the CPU has, 1 and 2 threads; its decline
// rules; and the conv dispatch running oneDNN's conv and then the pass where the rules take it.
#include "kernels/native/activation_pass.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "kernels/native/cpu.h"
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
    for (const Activation a : {Activation::Sigmoid, Activation::SiLU}) {
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
            "the activation is not sigmoid or SiLU");
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

}  // namespace
}  // namespace refold
