// Every module's forward equals the reference kernel applied to its parameters, for NCHW and
// channels_last inputs. Ops that functional.cpp dispatches to oneDNN or refold's native kernels
// (convs, batch norm, activations, average and adaptive average pooling) compute in float32 in
// their own order: Tolerance::op_f32. Max
// pooling picks an input value and the rest still run the reference: Tolerance::exact.
#include <gtest/gtest.h>

#include <memory>

#include "nn/nn_test_helpers.h"
#include "refold/refold.h"
#include "testing/compare.h"

namespace refold {
namespace {

constexpr auto CL = MemoryFormat::ChannelsLast;
constexpr auto NCHW = MemoryFormat::Contiguous;
using testing::Tolerance;

class NnForward : public ::testing::TestWithParam<MemoryFormat> {
 protected:
  // Channel counts 12/13 hit odd remainders; 7×9 spatial is neither square nor a power of 2.
  Tensor input(const Shape& sizes) { return randn(sizes, {DType::Float32, GetParam()}, gen_); }
  Generator gen_{77};
};

TEST_P(NnForward, Conv2d) {
  const Tensor x = input({2, 12, 7, 9});
  for (const auto& options :
       {nn::Conv2dOptions(12, 13, 3), nn::Conv2dOptions(12, 6, 3).stride(2).padding(1).groups(2),
        nn::Conv2dOptions(12, 12, 3).groups(12).dilation(2).padding({2, 1}),
        nn::Conv2dOptions(12, 4, {3, 1}).padding(Padding2d::same()),
        nn::Conv2dOptions(12, 4, 1).bias(false)}) {
    nn::Conv2d conv(options);
    const Tensor y = conv(x);
    const Tensor ref = reference::conv2d(x, conv.weight(), conv.bias(), options.op_options());
    // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
    EXPECT_TRUE(testing::all_close(y, ref, Tolerance::op_f32()));
    // PyTorch's rule: channels_last in, channels_last out.
    EXPECT_EQ(y.suggest_memory_format(), GetParam());
  }
}

TEST_P(NnForward, ConvTranspose2d) {
  const Tensor x = input({2, 12, 5, 6});
  for (const auto& options :
       {nn::ConvTranspose2dOptions(12, 13, 3),
        nn::ConvTranspose2dOptions(12, 6, 3).stride(2).padding(1).output_padding(1).groups(2),
        nn::ConvTranspose2dOptions(12, 4, {2, 3}).stride({3, 2}).dilation(2).bias(false)}) {
    nn::ConvTranspose2d up(options);
    const Tensor y = up(x);
    const Tensor ref = reference::conv_transpose2d(x, up.weight(), up.bias(), options.op_options());
    // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
    EXPECT_TRUE(testing::all_close(y, ref, Tolerance::op_f32()));
    EXPECT_EQ(y.suggest_memory_format(), GetParam());
  }
}

TEST_P(NnForward, BatchNorm2d) {
  const Tensor x = input({2, 13, 7, 9});
  for (bool affine : {true, false}) {
    nn::BatchNorm2d bn(nn::BatchNorm2dOptions(13).affine(affine).eps(1e-3));
    testing::randomize(bn, gen_);
    const Tensor y = bn(x);
    const Tensor ref =
        reference::batch_norm(x, bn.running_mean(), bn.running_var(), bn.weight(), bn.bias(), 1e-3);
    // oneDNN runs batch norm in float32: the fp32 op policy, not bit-identity.
    EXPECT_TRUE(testing::all_close(y, ref, Tolerance::op_f32()));
    EXPECT_EQ(y.suggest_memory_format(), GetParam());
  }
}

TEST_P(NnForward, Activations) {
  const Tensor x = input({2, 13, 7, 9});
  const std::vector<std::pair<std::shared_ptr<nn::Module>, Tensor>> cases = {
      {std::make_shared<nn::ReLU>(), reference::relu(x)},
      {std::make_shared<nn::ReLU6>(), reference::relu6(x)},
      {std::make_shared<nn::LeakyReLU>(), reference::leaky_relu(x, 0.01)},
      {std::make_shared<nn::LeakyReLU>(nn::LeakyReLUOptions().negative_slope(0.3)),
       reference::leaky_relu(x, 0.3)},
      {std::make_shared<nn::Sigmoid>(), reference::sigmoid(x)},
      {std::make_shared<nn::SiLU>(), reference::silu(x)},
      {std::make_shared<nn::Hardswish>(), reference::hardswish(x)},
      {std::make_shared<nn::Hardsigmoid>(), reference::hardsigmoid(x)},
  };
  for (const auto& [module, ref] : cases) {
    const Tensor y = (*module)(x);
    // oneDNN's eltwise (float32 formulas): the fp32 op policy, not bit-identity.
    EXPECT_TRUE(testing::all_close(y, ref, Tolerance::op_f32())) << module->type_name();
    EXPECT_EQ(y.suggest_memory_format(), GetParam()) << module->type_name();
  }
}

TEST_P(NnForward, Pools) {
  const Tensor x = input({2, 13, 7, 9});
  const nn::MaxPool2dOptions mp =
      nn::MaxPool2dOptions(3).stride(2).padding(1).dilation({1, 2}).ceil_mode(true);
  const Tensor y1 = nn::MaxPool2d(mp)(x);
  EXPECT_TRUE(
      testing::all_close(y1, reference::max_pool2d(x, mp.op_options()), Tolerance::exact()));
  EXPECT_EQ(y1.suggest_memory_format(), GetParam());

  const nn::AvgPool2dOptions ap =
      nn::AvgPool2dOptions({3, 2}).padding({1, 0}).count_include_pad(false).ceil_mode(true);
  const Tensor y2 = nn::AvgPool2d(ap)(x);
  // oneDNN sums in float32: the fp32 op policy, not bit-identity.
  EXPECT_TRUE(
      testing::all_close(y2, reference::avg_pool2d(x, ap.op_options()), Tolerance::op_f32()));
  EXPECT_EQ(y2.suggest_memory_format(), GetParam());

  const Tensor y3 = nn::AdaptiveAvgPool2d({3, 2})(x);
  // refold's native kernel sums in float32 too (kernels/native/adaptive_pool2d.h).
  EXPECT_TRUE(
      testing::all_close(y3, reference::adaptive_avg_pool2d(x, {3, 2}), Tolerance::op_f32()));
  EXPECT_EQ(y3.suggest_memory_format(), GetParam());
}

TEST_P(NnForward, LinearFlattenIdentityPixelShuffle) {
  const Tensor x = input({2, 12, 3, 4});
  nn::Flatten flatten;
  reset_permute_count();
  const Tensor flat = flatten(x);
  // Flatten declares NCHW-only: a channels_last input is permuted once, visibly.
  EXPECT_EQ(permute_count(), GetParam() == CL ? 1u : 0u);
  EXPECT_EQ(flat.sizes(), (Shape{2, 144}));
  EXPECT_TRUE(
      testing::all_close(flat, reference::flatten(x.contiguous(), 1, -1), Tolerance::exact()));
  nn::Flatten middle(nn::FlattenOptions().start_dim(1).end_dim(2));
  EXPECT_EQ(middle(x).sizes(), (Shape{2, 36, 4}));

  nn::Linear fc(144, 10);
  // Linear runs on oneDNN's matmul (its own summation order): the fp32 op policy.
  EXPECT_TRUE(testing::all_close(fc(flat), reference::linear(flat, fc.weight(), fc.bias()),
                                 Tolerance::op_f32()));

  nn::Identity identity;
  EXPECT_TRUE(identity(x).is_same(x));

  nn::PixelShuffle shuffle(2);
  const Tensor up = shuffle(x);
  EXPECT_EQ(up.sizes(), (Shape{2, 3, 6, 8}));
  EXPECT_TRUE(testing::all_close(up, reference::pixel_shuffle(x, 2), Tolerance::exact()));
}

TEST_P(NnForward, SequentialChainsItsChildren) {
  const Tensor x = input({1, 12, 6, 6});
  auto conv = std::make_shared<nn::Conv2d>(nn::Conv2dOptions(12, 8, 3).padding(1));
  auto bn = std::make_shared<nn::BatchNorm2d>(8);
  auto act = std::make_shared<nn::SiLU>();
  testing::randomize(*bn, gen_);
  nn::Sequential seq(conv, bn, act);
  const Tensor manual = (*act)((*bn)((*conv)(x)));
  EXPECT_TRUE(testing::all_close(seq(x), manual, Tolerance::exact()));
  EXPECT_TRUE(nn::Sequential()(x).is_same(x));  // empty Sequential: identity
}

std::string format_test_name(const ::testing::TestParamInfo<MemoryFormat>& param) {
  return param.param == NCHW ? "nchw" : "channels_last";
}

INSTANTIATE_TEST_SUITE_P(Formats, NnForward, ::testing::Values(NCHW, CL), format_test_name);

}  // namespace
}  // namespace refold
