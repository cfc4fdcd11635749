// refold's Winograd F(2×2, 3×3) conv (kernels/winograd) against the reference conv2d: shapes
// that exercise every tile edge (odd and even output sizes, asymmetric, 'same', 0 and 2
// padding), the 8-wide output-channel tail, several chunks of tiles, batch > 1, every fused
// activation and the residual sum, 1 and 2 threads; then the declines, the argument errors, the
// transformed-weight cache, determinism across thread counts, and the conv-algorithm setting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "kernels/post_ops.h"
#include "kernels/winograd/conv2d.h"
#include "kernels/winograd/cpu.h"
#include "refold/conv_algorithm.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"

namespace refold {
namespace {

using ::testing::HasSubstr;
using testing::Tolerance;
constexpr auto NHWC = MemoryFormat::ChannelsLast;

// Restores the settings a test may change.
class Winograd : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!winograd::cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2/FMA";
    threads_ = get_num_threads();
    algorithm_ = get_conv_algorithm();
  }
  void TearDown() override {
    set_num_threads(threads_);
    set_conv_algorithm(algorithm_);
  }

 private:
  int threads_ = 1;
  ConvAlgorithm algorithm_ = ConvAlgorithm::Auto;
};

struct Case {
  std::string name;
  std::int64_t n = 1, c_in = 16, c_out = 16, h = 8, w = 8;
  Padding2d padding = 1;
  bool bias = true;
  Activation activation = Activation::None;
  bool residual = false;
};

struct Operands {
  Tensor input, weight, bias;
};

// t *= factor, in place (t contiguous); a write, so it bumps t's version.
void scale(Tensor& t, float factor) {
  float* p = t.data<float>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] *= factor;
}

// Unit-variance input; weights scaled by 1/sqrt(fan-in) keep outputs near unit scale, the range
// the fp32 tolerance is written for.
Operands make_operands(const Case& c, std::uint64_t seed = 7) {
  Generator gen(seed);
  Operands o;
  o.input = randn({c.n, c.c_in, c.h, c.w}, {}, gen).contiguous(NHWC);
  o.weight = randn({c.c_out, c.c_in, 3, 3}, {}, gen);
  scale(o.weight, static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.c_in * 9))));
  if (c.bias) o.bias = randn({c.c_out}, {}, gen);
  return o;
}

PostOps post_ops_for(const Case& c, const Shape& out_sizes) {
  PostOps post;
  post.activation = c.activation;
  post.negative_slope = 0.1;
  if (c.residual) {
    Generator gen(99);
    post.residual = randn(out_sizes, {}, gen).contiguous(NHWC);
  }
  return post;
}

Conv2dOptions options_for(const Case& c) {
  Conv2dOptions options;
  options.padding = c.padding;
  return options;
}

void expect_matches_reference(const Case& c) {
  const Operands o = make_operands(c);
  const Conv2dOptions options = options_for(c);
  const Tensor plain = reference::conv2d(o.input, o.weight, o.bias, options);
  const PostOps post = post_ops_for(c, plain.sizes());
  const Tensor expected = post.empty() ? plain : reference::apply_post_ops(plain, post);
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    std::string declined;
    const Tensor y = winograd::conv2d(o.input, o.weight, o.bias, options, post, &declined);
    ASSERT_TRUE(y.defined()) << c.name << ": declined: " << declined;
    EXPECT_TRUE(y.is_contiguous(NHWC)) << c.name;
    EXPECT_TRUE(testing::all_close(y, expected, Tolerance::op_f32()))
        << c.name << ", threads " << threads;
  }
}

std::vector<Case> shape_cases() {
  std::vector<Case> cases;
  cases.push_back({.name = "even 8x8, pad 1"});
  cases.push_back({.name = "odd 7x5 (partial tiles), batch 3", .n = 3, .h = 7, .w = 5});
  cases.push_back({.name = "pad 0", .h = 9, .w = 6, .padding = 0});
  cases.push_back({.name = "pad 2", .h = 5, .w = 5, .padding = 2});
  cases.push_back(
      {.name = "asymmetric pads", .h = 6, .w = 7, .padding = Padding2d::asymmetric(0, 2, 1, 0)});
  cases.push_back({.name = "'same'", .h = 6, .w = 6, .padding = Padding2d::same()});
  cases.push_back({.name = "1x1 input", .h = 1, .w = 1});
  cases.push_back({.name = "8-wide channel tail (24 out, 8 in)", .c_in = 8, .c_out = 24});
  cases.push_back({.name = "no bias", .c_in = 32, .c_out = 48, .bias = false});
  // 64 channels at 66×66: 1089 tiles × 16 positions × 128 floats = 8.9 MB, several chunks.
  cases.push_back({.name = "several chunks", .c_in = 64, .c_out = 64, .h = 66, .w = 66});
  cases.push_back({.name = "RepVGG-A0 stage 3 layer", .c_in = 192, .c_out = 192, .h = 14, .w = 14});
  return cases;
}

TEST_F(Winograd, MatchesReferenceOverShapes) {
  for (const Case& c : shape_cases()) expect_matches_reference(c);
}

TEST_F(Winograd, FusesEveryActivationAndTheResidual) {
  for (Activation a :
       {Activation::None, Activation::ReLU, Activation::ReLU6, Activation::LeakyReLU,
        Activation::Sigmoid, Activation::SiLU, Activation::HardSwish, Activation::HardSigmoid}) {
    for (bool residual : {false, true}) {
      Case c{.name = std::string(activation_name(a)) + (residual ? " + residual" : ""),
             .n = 2,
             .c_in = 16,
             .c_out = 24,
             .h = 7,
             .w = 6};
      c.activation = a;
      c.residual = residual;
      expect_matches_reference(c);
    }
  }
}

TEST_F(Winograd, SameBitsWithOneOrTwoThreads) {
  const Case c{.name = "threads", .n = 2, .c_in = 32, .c_out = 32, .h = 20, .w = 18};
  const Operands o = make_operands(c);
  set_num_threads(1);
  const Tensor one = winograd::conv2d(o.input, o.weight, o.bias, options_for(c), {}, nullptr);
  set_num_threads(2);
  const Tensor two = winograd::conv2d(o.input, o.weight, o.bias, options_for(c), {}, nullptr);
  EXPECT_TRUE(testing::all_close(one, two, Tolerance::exact()));
}

struct DeclineCase {
  std::string name;
  std::function<void(Tensor& input, Tensor& weight, Conv2dOptions& options, PostOps& post)> edit;
  std::string reason;
};

TEST_F(Winograd, DeclinesWhatItDoesNotTake) {
  const std::vector<DeclineCase> cases = {
      {"stride 2", [](Tensor&, Tensor&, Conv2dOptions& o, PostOps&) { o.stride = 2; },
       "stride 1 and dilation 1 only"},
      {"dilation 2", [](Tensor&, Tensor&, Conv2dOptions& o, PostOps&) { o.dilation = 2; },
       "stride 1 and dilation 1 only"},
      {"groups 2",
       [](Tensor&, Tensor& w, Conv2dOptions& o, PostOps&) {
         o.groups = 2;
         w = randn({16, 8, 3, 3});
       },
       "groups 1 only"},
      {"1x1 kernel",
       [](Tensor&, Tensor& w, Conv2dOptions&, PostOps&) {
         w = randn({16, 16, 1, 1});
       },
       "3x3 kernels only"},
      {"5x5 kernel",
       [](Tensor&, Tensor& w, Conv2dOptions& o, PostOps&) {
         w = randn({16, 16, 5, 5});
         o.padding = 2;
       },
       "3x3 kernels only"},
      {"12 output channels",
       [](Tensor&, Tensor& w, Conv2dOptions&, PostOps&) {
         w = randn({12, 16, 3, 3});
       },
       "channel counts must be multiples of 8"},
      {"NCHW input", [](Tensor& x, Tensor&, Conv2dOptions&, PostOps&) { x = x.contiguous(); },
       "input not channels_last"},
      {"bfloat16",
       [](Tensor& x, Tensor& w, Conv2dOptions&, PostOps&) {
         x = x.to(DType::BFloat16);
         w = w.to(DType::BFloat16);
       },
       "float32 only"},
      {"NCHW residual",
       [](Tensor&, Tensor&, Conv2dOptions&, PostOps& p) {
         p.residual = randn({1, 16, 8, 8});
       },
       "residual not channels_last"},
      {"empty batch",
       [](Tensor& x, Tensor&, Conv2dOptions&, PostOps&) {
         x = empty({0, 16, 8, 8}, NHWC);
       },
       "empty output"},
      {"algorithm 'direct'",
       [](Tensor&, Tensor&, Conv2dOptions&, PostOps&) {
         set_conv_algorithm(ConvAlgorithm::Direct);
       },
       "conv algorithm is 'direct'"},
  };
  for (const DeclineCase& d : cases) {
    set_conv_algorithm(ConvAlgorithm::Auto);
    Tensor input = randn({1, 16, 8, 8}).contiguous(NHWC), weight = randn({16, 16, 3, 3});
    Conv2dOptions options;
    options.padding = 1;
    PostOps post;
    d.edit(input, weight, options, post);
    std::string declined;
    const Tensor y = winograd::conv2d(input, weight, {}, options, post, &declined);
    EXPECT_FALSE(y.defined()) << d.name;
    EXPECT_EQ(declined, d.reason) << d.name;
    // Without a place to say why, a decline is an error that says why.
    EXPECT_THAT([&] { (void)winograd::conv2d(input, weight, {}, options, post, nullptr); },
                ::testing::ThrowsMessage<Error>(HasSubstr("winograd declined: " + d.reason)))
        << d.name;
  }
}

TEST_F(Winograd, InvalidArgumentsFailWithTheReferenceMessages) {
  const Tensor input = randn({1, 16, 8, 8}).contiguous(NHWC), weight = randn({16, 16, 3, 3});
  Conv2dOptions options;
  options.padding = 1;
  const Tensor bad_bias = randn({15});
  std::string reference_message;
  try {
    (void)reference::conv2d(input, weight, bad_bias, options);
  } catch (const Error& e) {
    reference_message = e.message();
  }
  ASSERT_THAT(reference_message, HasSubstr("bias"));
  std::string declined;
  EXPECT_THAT([&] { (void)winograd::conv2d(input, weight, bad_bias, options, {}, &declined); },
              ::testing::ThrowsMessage<Error>(HasSubstr(reference_message)));
  PostOps post;
  post.residual = randn({1, 16, 8, 7}).contiguous(NHWC);
  EXPECT_THAT([&] { (void)winograd::conv2d(input, weight, {}, options, post, &declined); },
              ::testing::ThrowsMessage<Error>(HasSubstr("residual must have the output's sizes")));
}

TEST_F(Winograd, TransformsAWeightOnceAndAgainAfterItChanges) {
  winograd::clear_cache();
  const Case c{.name = "cache"};
  Operands o = make_operands(c);
  const Conv2dOptions options = options_for(c);
  (void)winograd::conv2d(o.input, o.weight, o.bias, options, {}, nullptr);
  (void)winograd::conv2d(o.input, o.weight, o.bias, options, {}, nullptr);
  EXPECT_EQ(winograd::cache_stats().transforms, 1u);
  EXPECT_EQ(winograd::cache_stats().hits, 1u);
  EXPECT_EQ(winograd::cache_stats().weights, 1u);
  EXPECT_EQ(winograd::cache_stats().bytes, 16u * 16u * 16u * sizeof(float));
  // Writing the weight bumps its version: the next call transforms it again, so the result
  // follows the new values.
  scale(o.weight, 2.0f);
  const Tensor y = winograd::conv2d(o.input, o.weight, o.bias, options, {}, nullptr);
  EXPECT_EQ(winograd::cache_stats().transforms, 2u);
  EXPECT_TRUE(testing::all_close(y, reference::conv2d(o.input, o.weight, o.bias, options),
                                 Tolerance::op_f32()));
  winograd::clear_cache();
  EXPECT_EQ(winograd::cache_stats().weights, 0u);
  EXPECT_EQ(winograd::cache_stats().transforms, 0u);
}

TEST_F(Winograd, FunctionalConvRunsItUnlessTheAlgorithmIsDirect) {
  const Case c{.name = "dispatch", .c_in = 32, .c_out = 32, .h = 10, .w = 10};
  const Operands o = make_operands(c);
  winograd::clear_cache();
  set_conv_algorithm(ConvAlgorithm::Auto);
  const Tensor fast = functional::conv2d(o.input, o.weight, o.bias, options_for(c));
  EXPECT_EQ(winograd::cache_stats().transforms, 1u);
  set_conv_algorithm(ConvAlgorithm::Direct);
  const Tensor direct = functional::conv2d(o.input, o.weight, o.bias, options_for(c));
  EXPECT_EQ(winograd::cache_stats().transforms + winograd::cache_stats().hits, 1u);
  EXPECT_TRUE(testing::all_close(fast, direct, Tolerance::op_f32()));
  // A stride-2 conv is not Winograd's: functional::conv2d falls through to oneDNN.
  Conv2dOptions strided = options_for(c);
  strided.stride = 2;
  set_conv_algorithm(ConvAlgorithm::Auto);
  (void)functional::conv2d(o.input, o.weight, o.bias, strided);
  EXPECT_EQ(winograd::cache_stats().transforms + winograd::cache_stats().hits, 1u);
}

TEST(ConvAlgorithm, ParsesItsNamesAndRejectsOthers) {
  EXPECT_EQ(parse_conv_algorithm("auto"), ConvAlgorithm::Auto);
  EXPECT_EQ(parse_conv_algorithm("direct"), ConvAlgorithm::Direct);
  EXPECT_EQ(conv_algorithm_name(ConvAlgorithm::Auto), "auto");
  EXPECT_EQ(conv_algorithm_name(ConvAlgorithm::Direct), "direct");
  EXPECT_THAT([] { (void)parse_conv_algorithm("winograd"); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("conv algorithm 'winograd' is not one of: auto, direct")));
}

}  // namespace
}  // namespace refold
