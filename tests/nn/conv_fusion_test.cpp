// Module-level post-op fusion: Conv2d::set_activation, Conv2d::forward_with_residual,
// functional::conv2d(…, PostOps) and nn::utils::fuse_conv_activations, each against the
// unfused computation (conv, then the activation module / add), in both layouts and with 1 and
// 2 threads.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "nn/nn_test_helpers.h"
#include "refold/refold.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using testing::throws_error;
constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto NCHW = MemoryFormat::Contiguous;

struct ActivationCase {
  Activation activation;
  double slope;
  std::function<Tensor(const Tensor&)> unfused;
};

std::vector<ActivationCase> activation_cases() {
  return {
      {Activation::ReLU, 0.01, [](const Tensor& x) { return reference::relu(x); }},
      {Activation::ReLU6, 0.01, [](const Tensor& x) { return reference::relu6(x); }},
      {Activation::LeakyReLU, 0.2, [](const Tensor& x) { return reference::leaky_relu(x, 0.2); }},
      {Activation::Sigmoid, 0.01, [](const Tensor& x) { return reference::sigmoid(x); }},
      {Activation::SiLU, 0.01, [](const Tensor& x) { return reference::silu(x); }},
      {Activation::HardSwish, 0.01, [](const Tensor& x) { return reference::hardswish(x); }},
      {Activation::HardSigmoid, 0.01, [](const Tensor& x) { return reference::hardsigmoid(x); }},
      {Activation::GELU, 0.01,
       [](const Tensor& x) { return reference::unary(x, reference::UnaryOp::Gelu); }},
  };
}

class ConvFusion : public ::testing::TestWithParam<std::tuple<MemoryFormat, int>> {
 protected:
  void SetUp() override {
    set_num_threads(std::get<1>(GetParam()));
    manual_seed(7);
  }
  MemoryFormat format() const { return std::get<0>(GetParam()); }

  // An odd-sized strided conv (7 → 5 channels, stride 2, padding 1) in the test's layout.
  std::shared_ptr<nn::Conv2d> make_conv() const {
    auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(7, 5, 3).stride(2).padding(1));
    nn::utils::convert_conv2d_weight_memory_format(*conv, format());
    return conv;
  }
  Tensor input() const { return randn({2, 7, 9, 11}).contiguous(format()); }

 private:
  testing::RestoreNumThreads restore_threads_;
};

TEST_P(ConvFusion, SetActivationMatchesConvThenActivation) {
  const auto conv = make_conv();
  const Tensor x = input();
  const Tensor plain =
      reference::conv2d(x, conv->weight(), conv->bias(), conv->options().op_options());
  EXPECT_EQ(conv->activation(), Activation::None);
  for (const ActivationCase& c : activation_cases()) {
    SCOPED_TRACE(std::string(activation_name(c.activation)));
    conv->set_activation(c.activation, c.slope);
    EXPECT_EQ(conv->activation(), c.activation);
    const Tensor y = (*conv)(x);
    EXPECT_TRUE(y.is_contiguous(format()));
    EXPECT_TRUE(testing::all_close(y, c.unfused(plain), testing::Tolerance::op_f32()));
  }
  conv->set_activation(Activation::None);
  EXPECT_TRUE(testing::all_close((*conv)(x), plain, testing::Tolerance::op_f32()));
}

TEST_P(ConvFusion, ForwardWithResidualIsActOfConvPlusResidual) {
  const auto conv = make_conv();
  const Tensor x = input();
  const Tensor plain =
      reference::conv2d(x, conv->weight(), conv->bias(), conv->options().op_options());
  // The residual in the other layout too: it is copied into the output whatever its strides.
  for (MemoryFormat residual_format : {NCHW, CL}) {
    const Tensor residual = randn(plain.sizes()).contiguous(residual_format);
    conv->set_activation(Activation::None);
    EXPECT_TRUE(testing::all_close(conv->forward_with_residual(x, residual),
                                   reference::add(plain, residual), testing::Tolerance::op_f32()));
    conv->set_activation(Activation::ReLU);
    const Tensor y = conv->forward_with_residual(x, residual);
    EXPECT_TRUE(y.is_contiguous(format()));
    EXPECT_TRUE(testing::all_close(y, reference::relu(reference::add(plain, residual)),
                                   testing::Tolerance::op_f32()));
  }
  EXPECT_TRUE(throws_error(
      [&] {
        conv->forward_with_residual(x, randn({2, 5, 5, 5}));
      },
      "Conv2d: conv2d: residual must have the output's sizes [2, 5, 5, 6]"));
  EXPECT_TRUE(throws_error([&] { conv->forward_with_residual(x, Tensor{}); },
                           "Conv2d: forward_with_residual given an undefined residual"));
}

TEST_P(ConvFusion, FunctionalConv2dTakesPostOps) {
  const Tensor x = input();
  const Tensor w = randn({6, 7, 3, 3}).contiguous(format());
  const Tensor b = randn({6});
  const Conv2dOptions options{1, Padding2d::asymmetric(1, 0, 2, 1), 1, 1};
  const Tensor plain = reference::conv2d(x, w, b, options);
  PostOps post;
  post.activation = Activation::HardSwish;
  post.residual = randn(plain.sizes());
  EXPECT_TRUE(testing::all_close(functional::conv2d(x, w, b, options, post),
                                 reference::hardswish(reference::add(plain, post.residual)),
                                 testing::Tolerance::op_f32()));
  // bfloat16 runs on oneDNN where the CPU has avx512_bf16, else on the reference (unfused):
  // either way the same function, within the bf16 policy of the f32 result.
  const Tensor y16 =
      functional::conv2d(x.to(DType::BFloat16), w.to(DType::BFloat16), b.to(DType::BFloat16),
                         options, PostOps{Activation::ReLU, 0.01, {}, {}});
  EXPECT_EQ(y16.dtype(), DType::BFloat16);
  EXPECT_TRUE(testing::all_close(y16.to(DType::Float32), reference::relu(plain),
                                 testing::Tolerance::bf16()));
}

INSTANTIATE_TEST_SUITE_P(LayoutsThreads, ConvFusion,
                         ::testing::Combine(::testing::Values(NCHW, CL), ::testing::Values(1, 2)));

TEST(ConvFusionModule, SetActivationValidates) {
  nn::Conv2d conv(3, 4, 3);
  EXPECT_TRUE(throws_error([&] { conv.set_activation(static_cast<Activation>(42)); },
                           "Conv2d: unknown activation (42)"));
  EXPECT_TRUE(throws_error(
      [&] { conv.set_activation(Activation::LeakyReLU, std::numeric_limits<double>::infinity()); },
      "Conv2d: leaky_relu negative_slope (inf) must be finite"));
  EXPECT_EQ(conv.activation(), Activation::None);
  conv.set_activation(Activation::LeakyReLU, 0.3);
  EXPECT_EQ(conv.negative_slope(), 0.3);
}

// set_post_ops refuses steps the conv could not apply, naming the module and the value.
TEST(ConvFusionModule, SetPostOpsValidatesTheSteps) {
  nn::Conv2d conv(3, 4, 3);
  PostOps post;
  post.then = {{.scale = {1.0f, 2.0f}}};  // neither 1 value nor one per channel (4)
  EXPECT_TRUE(throws_error([&] { conv.set_post_ops(post); },
                           "Conv2d: post-op step 0 has 2 scale values; it needs 1 or one per "
                           "channel (4)"));
  post.then = {{.shift = {std::numeric_limits<float>::quiet_NaN()}}};
  EXPECT_TRUE(throws_error([&] { conv.set_post_ops(post); },
                           "Conv2d: post-op step 0 has a non-finite shift (nan)"));
  post.then = {{.add_residual = true}, {.add_residual = true}};
  EXPECT_TRUE(throws_error([&] { conv.set_post_ops(post); }, "2 post-op steps add the residual"));
  PostOps with_residual;
  with_residual.residual = randn({1, 4, 1, 1});
  EXPECT_TRUE(throws_error([&] { conv.set_post_ops(with_residual); },
                           "Conv2d: set_post_ops given a residual"));
  EXPECT_TRUE(conv.post_ops().empty());
  post.then = {{.scale = {0.5f}, .shift = {1, 2, 3, 4}, .activation = Activation::ReLU}};
  conv.set_post_ops(post);
  EXPECT_EQ(conv.post_ops().description(), "mul[1]+add[4]+relu");
}

// Sequential(conv, relu, conv, bn, relu6, conv, leaky(0.2), conv, silu, linear-ish tail)
TEST(ConvFusionModule, FuseConvActivationsInEverySequential) {
  manual_seed(3);
  auto inner = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(5, 5, 3).padding(1)),
      std::make_shared<nn::LeakyReLU>(nn::LeakyReLUOptions().negative_slope(0.2)));
  auto bn = std::make_shared<nn::BatchNorm2d>(6);
  Generator gen(5);
  testing::randomize(*bn, gen);
  auto net = std::make_shared<nn::Sequential>(
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(3, 6, 3).padding(1)),
      std::make_shared<nn::ReLU>(),                                         // fused
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(6, 6, 3).padding(1)),  //
      bn,                                                                   // conv→bn: not
      std::make_shared<nn::ReLU6>(),                                        // not (after bn)
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(6, 5, 1)),             //
      std::make_shared<nn::Hardswish>(),                                    // fused
      inner,                                                                // conv+leaky fused
      std::make_shared<nn::Conv2d>(nn::Conv2dOptions(5, 4, 3).stride(2)),   //
      std::make_shared<nn::Sigmoid>());                                     // fused
  const StateDict before = net->state_dict();
  const Tensor x = randn({1, 3, 13, 13});
  const Tensor expected = (*net)(x);

  EXPECT_EQ(nn::utils::fuse_conv_activations(*net), 4u);
  EXPECT_EQ(net->at<nn::Conv2d>(0)->activation(), Activation::ReLU);
  EXPECT_EQ(net->at<nn::Conv2d>(2)->activation(), Activation::None);
  EXPECT_EQ(net->at<nn::Conv2d>(5)->activation(), Activation::HardSwish);
  EXPECT_EQ(net->at<nn::Conv2d>(8)->activation(), Activation::Sigmoid);
  EXPECT_EQ(inner->at<nn::Conv2d>(0)->activation(), Activation::LeakyReLU);
  EXPECT_EQ(inner->at<nn::Conv2d>(0)->negative_slope(), 0.2);
  EXPECT_EQ((*net)[1]->type_name(), "Identity");
  EXPECT_EQ((*net)[4]->type_name(), "ReLU6");
  EXPECT_EQ((*inner)[1]->type_name(), "Identity");

  // Same names and tensors: state_dict unchanged.
  const StateDict after = net->state_dict();
  ASSERT_EQ(after.size(), before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after.entries()[i].first, before.entries()[i].first);
    EXPECT_TRUE(after.entries()[i].second.is_same(before.entries()[i].second));
  }
  // Same function, in both layouts; fusing twice finds nothing more.
  EXPECT_TRUE(testing::all_close((*net)(x), expected, testing::Tolerance::op_f32()));
  nn::utils::convert_conv2d_weight_memory_format(*net, CL);
  EXPECT_TRUE(testing::all_close((*net)(x.contiguous(CL)), expected, testing::Tolerance::op_f32()));
  EXPECT_EQ(nn::utils::fuse_conv_activations(*net), 0u);
}

}  // namespace
}  // namespace refold
