// The bridge between nn modules and the kernel algebra: modules read as values, folded, and
// rebuilt as modules give the unfused modules' outputs (BN statistics randomized; tolerance
// testing::model_close).
#include "refold/reparam/module_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "refold/error.h"
#include "refold/reference.h"
#include "testing/compare.h"

namespace refold {
namespace {

using reparam::ConvKernel;
using ::testing::HasSubstr;

// Running statistics and affine parameters far from a fresh BN's identity.
std::shared_ptr<nn::BatchNorm2d> random_batch_norm(std::int64_t channels, Generator& gen) {
  auto bn = std::make_shared<nn::BatchNorm2d>(channels);
  const auto fill = [&](Tensor t, double lo, double hi) {
    for (std::int64_t c = 0; c < channels; ++c)
      t.set({c}, static_cast<float>(lo + (hi - lo) * gen.uniform()));
  };
  fill(bn->weight(), -1.5, 1.5);
  fill(bn->bias(), -1, 1);
  fill(bn->running_mean(), -1, 1);
  fill(bn->running_var(), 0.5, 2);
  return bn;
}

TEST(ReparamModuleKernels, ReadsModulesWithoutCopying) {
  manual_seed(1);
  nn::Conv2d conv(nn::Conv2dOptions(4, 6, 3).groups(2));
  const ConvKernel k = reparam::kernel_of(conv);
  EXPECT_TRUE(k.weight.is_same(conv.weight()));
  EXPECT_TRUE(k.bias.is_same(conv.bias()));
  EXPECT_EQ(k.groups, 2);
  nn::BatchNorm2d bn(nn::BatchNorm2dOptions(6).eps(1e-3).affine(false));
  const reparam::BatchNormParams p = reparam::params_of(bn);
  EXPECT_FALSE(p.weight.defined());
  EXPECT_TRUE(p.running_var.is_same(bn.running_var()));
  EXPECT_EQ(p.eps, 1e-3);
}

// RepVGG from modules: BN(conv3×3) + BN(conv1×1) + BN(x) == one Conv2d built by make_conv2d.
TEST(ReparamModuleKernels, RepVGGFromModules) {
  manual_seed(2);
  Generator gen(2);
  const std::int64_t c = 4;
  for (std::int64_t groups : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << "groups " << groups);
    nn::Conv2d dense(nn::Conv2dOptions(c, c, 3).padding(1).groups(groups).bias(false));
    nn::Conv2d pointwise(nn::Conv2dOptions(c, c, 1).groups(groups).bias(false));
    const auto bn_dense = random_batch_norm(c, gen), bn_1x1 = random_batch_norm(c, gen),
               bn_id = random_batch_norm(c, gen);
    const Tensor x = randn({2, c, 6, 5}, {}, gen);
    const Tensor expected =
        reference::add(reference::add((*bn_dense)(dense(x)), (*bn_1x1)(pointwise(x))), (*bn_id)(x));

    using namespace reparam;
    check_branch_alignment(1, 0, 3, 1);
    const ConvKernel k =
        sum_branches({fold_batch_norm(kernel_of(dense), params_of(*bn_dense)),
                      pad_kernel_to(fold_batch_norm(kernel_of(pointwise), params_of(*bn_1x1)), 3),
                      identity_with_batch_norm(c, groups, 3, params_of(*bn_id))});
    const auto fused = make_conv2d(k, dense.options());
    EXPECT_EQ(fused->options().groups(), groups);
    EXPECT_EQ(fused->options().padding().explicit_pads(), (Pads2d{1, 1, 1, 1}));
    EXPECT_TRUE(fused->has_bias());
    EXPECT_TRUE(testing::model_close((*fused)(x), expected));
  }
}

TEST(ReparamModuleKernels, MakeConv2dOwnsItsParametersInTheRequestedFormat) {
  manual_seed(3);
  nn::Conv2d conv(nn::Conv2dOptions(3, 8, 3).stride(2).padding(1));
  const ConvKernel k = reparam::kernel_of(conv);
  const auto copy = reparam::make_conv2d(k, conv.options(), MemoryFormat::ChannelsLast);
  EXPECT_TRUE(copy->weight().is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_FALSE(copy->weight().shares_storage(conv.weight()));
  EXPECT_EQ(copy->options().stride(), Size2d(2));
  // Same values, same geometry: the same output, exactly.
  const Tensor x = randn({1, 3, 7, 7});
  // oneDNN runs the conv (its own summation order): the fp32 op policy, not bit-identity.
  EXPECT_TRUE(testing::all_close((*copy)(x), conv(x), testing::Tolerance::op_f32()));
  // The state_dict sees the installed tensors under PyTorch's names.
  const StateDict state = copy->state_dict();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_TRUE(state.at("weight").is_same(copy->weight()));
  EXPECT_TRUE(testing::all_close(state.at("weight"), conv.weight(), testing::Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(state.at("bias"), conv.bias(), testing::Tolerance::exact()));
}

TEST(ReparamModuleKernels, ConvTransposeFoldFromModules) {
  manual_seed(4);
  Generator gen(4);
  const auto options =
      nn::ConvTranspose2dOptions(6, 4, 3).stride(2).padding(1).output_padding(1).groups(2);
  nn::ConvTranspose2d up(options);
  const auto bn = random_batch_norm(4, gen);
  const Tensor x = randn({1, 6, 4, 5}, {}, gen);
  const auto fused = reparam::make_conv_transpose2d(
      reparam::fold_batch_norm_into_conv_transpose(reparam::kernel_of(up), reparam::params_of(*bn)),
      options);
  EXPECT_TRUE(testing::model_close((*fused)(x), (*bn)(up(x))));
}

TEST(ReparamModuleKernels, BadArguments) {
  manual_seed(5);
  nn::Conv2d conv(nn::Conv2dOptions(4, 4, 3));
  const ConvKernel k = reparam::kernel_of(conv);
  EXPECT_THAT([&] { reparam::make_conv2d(k, conv.options(), MemoryFormat::Preserve); },
              ::testing::ThrowsMessage<Error>(HasSubstr(
                  "make_conv2d: weight_format must be contiguous or channels_last, got preserve")));
  EXPECT_THAT(
      [&] { reparam::make_conv2d(ConvKernel{}, conv.options()); },
      ::testing::ThrowsMessage<Error>(HasSubstr(
          "make_conv2d: weight must be a 4-d [out, in/groups, kh, kw] tensor, got undefined")));
  const ConvKernel short_bias{k.weight, ones({3}), 1};
  EXPECT_THAT([&] { reparam::make_conv2d(short_bias, conv.options()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("make_conv2d: bias float32[3]")));
  const ConvKernel int_weight{zeros({4, 4, 3, 3}, {DType::Int64}), Tensor{}, 1};
  EXPECT_THAT([&] { reparam::make_conv2d(int_weight, conv.options()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("make_conv2d: weight has dtype int64")));
  const reparam::ConvTransposeKernel t{ones({4, 3, 3, 3}), Tensor{}, 3};
  EXPECT_THAT([&] { reparam::make_conv_transpose2d(t, nn::ConvTranspose2dOptions(4, 9, 3)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("groups (3) must divide in_channels (4)")));
}

}  // namespace
}  // namespace refold
