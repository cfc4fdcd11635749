// The re-parameterizable blocks (issue 4): every block's training form against its
// re-parameterized form with BatchNorm statistics randomized (as RepVGG's own check does: a
// fresh BN is the identity and would hide a wrong fold), in NCHW and in channels_last, with
// groups and stride 2 where the block has them; idempotence; the state_dict names of the
// reference implementations; the preconditions, refused with the expected messages and the
// block left unchanged. Tolerance: testing::model_close (docs/testing.md).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "nn/nn_test_helpers.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/pooling.h"
#include "refold/nn/utils.h"
#include "refold/reparam/acnet.h"
#include "refold/reparam/dbb.h"
#include "refold/reparam/layers.h"
#include "refold/reparam/mobileone.h"
#include "refold/reparam/rep_conv.h"
#include "refold/reparam/repvgg.h"
#include "testing/compare.h"

namespace refold {
namespace {

using reparam::RepBlock;
using testing::throws_error;

// Every BatchNorm randomized, and DBB's zero-initialized IdentityBasedConv1x1 weights made
// non-zero, so each parameter of the fold is exercised.
void randomize_block(nn::Module& block, Generator& gen) {
  block.apply([&](nn::Module& m) {
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(&m)) testing::randomize(*bn, gen);
    if (auto* id = dynamic_cast<reparam::IdentityBasedConv1x1*>(&m))
      id->weight().copy_(randn(id->weight().sizes(), {}, gen));
  });
}

struct BlockCase {
  std::string name;
  std::function<std::shared_ptr<RepBlock>()> make;
  Shape input;
};

using reparam::ACBlockOptions;
using reparam::DiverseBranchBlockOptions;
using reparam::MobileOneBlockOptions;
using reparam::RepConvOptions;
using reparam::RepVGGBlockOptions;

template <typename Block, typename Options>
std::function<std::shared_ptr<RepBlock>()> maker(Options options) {
  return [options] { return std::make_shared<Block>(options); };
}

// Channel counts stay small (4–8) so each block runs in milliseconds; groups 1, 2 and depthwise,
// stride 1 and 2, kernels 3 and 5, every optional branch present and absent.
std::vector<BlockCase> block_cases() {
  using reparam::ACBlock;
  using reparam::DiverseBranchBlock;
  using reparam::MobileOneBlock;
  using reparam::QARepVGGBlock;
  using reparam::RepConv;
  using reparam::RepVGGBlock;
  const Shape x4{2, 4, 7, 6};
  return {
      {"RepVGG_identity", maker<RepVGGBlock>(RepVGGBlockOptions(4, 4)), x4},
      {"RepVGG_groups2", maker<RepVGGBlock>(RepVGGBlockOptions(4, 4).groups(2)), x4},
      {"RepVGG_depthwise", maker<RepVGGBlock>(RepVGGBlockOptions(4, 4).groups(4)), x4},
      {"RepVGG_stride2_widen", maker<RepVGGBlock>(RepVGGBlockOptions(4, 8).stride(2).groups(2)),
       x4},
      {"RepVGG_k5", maker<RepVGGBlock>(RepVGGBlockOptions(4, 4).kernel_size(5).padding(2)), x4},
      {"RepVGG_padding2", maker<RepVGGBlock>(RepVGGBlockOptions(4, 6).padding(2)), x4},
      {"QARepVGG_identity", maker<QARepVGGBlock>(RepVGGBlockOptions(4, 4)), x4},
      {"QARepVGG_groups2_stride2",
       maker<QARepVGGBlock>(RepVGGBlockOptions(4, 6).groups(2).stride(2)), x4},
      {"ACBlock", maker<ACBlock>(ACBlockOptions(4, 6, 3)), x4},
      {"ACBlock_groups2_stride2", maker<ACBlock>(ACBlockOptions(4, 4, 3).groups(2).stride(2)), x4},
      {"ACBlock_k5_no_affine", maker<ACBlock>(ACBlockOptions(4, 4, 5).use_affine(false)), x4},
      {"ACBlock_crop", maker<ACBlock>(ACBlockOptions(4, 4, 3).padding(0)), x4},
      {"ACBlock_k5_crop_stride2", maker<ACBlock>(ACBlockOptions(4, 4, 5).padding(1).stride(2)), x4},
      {"ACBlock_padding_over_half", maker<ACBlock>(ACBlockOptions(4, 4, 3).padding(2)), x4},
      {"ACBlock_dilation2", maker<ACBlock>(ACBlockOptions(4, 4, 3).dilation(2).padding(2)), x4},
      {"DBB_idconv", maker<DiverseBranchBlock>(DiverseBranchBlockOptions(4, 6, 3)), x4},
      {"DBB_conv1",
       maker<DiverseBranchBlock>(DiverseBranchBlockOptions(4, 6, 3).internal_channels_1x1_3x3(8)),
       x4},
      {"DBB_depthwise", maker<DiverseBranchBlock>(DiverseBranchBlockOptions(4, 4, 3).groups(4)),
       x4},
      {"DBB_groups2_stride2_relu",
       maker<DiverseBranchBlock>(DiverseBranchBlockOptions(4, 8, 3).groups(2).stride(2).nonlinear(
           std::make_shared<nn::ReLU>())),
       x4},
      {"DBB_k5", maker<DiverseBranchBlock>(DiverseBranchBlockOptions(4, 4, 5)), Shape{1, 4, 9, 8}},
      {"MobileOne_depthwise",
       maker<MobileOneBlock>(MobileOneBlockOptions(4, 4, 3).groups(4).num_conv_branches(3)), x4},
      {"MobileOne_depthwise_stride2",
       maker<MobileOneBlock>(
           MobileOneBlockOptions(4, 4, 3).groups(4).stride(2).num_conv_branches(2)),
       x4},
      {"MobileOne_pointwise",
       maker<MobileOneBlock>(MobileOneBlockOptions(4, 4, 1).num_conv_branches(2)), x4},
      {"MobileOne_pointwise_widen",
       maker<MobileOneBlock>(MobileOneBlockOptions(4, 8, 1).num_conv_branches(4)), x4},
      {"RepConv_bn", maker<RepConv>(RepConvOptions(4, 4).bn(true)), x4},
      {"RepConv_stride2", maker<RepConv>(RepConvOptions(4, 8).stride(2)), x4},
      {"RepConv_groups2_identity_act",
       maker<RepConv>(
           RepConvOptions(4, 4).groups(2).bn(true).activation(std::make_shared<nn::Identity>())),
       x4},
  };
}

// gtest prints a failing case by its name, not its bytes.
void PrintTo(const BlockCase& c, std::ostream* os) { *os << c.name; }

class ReparamBlocks : public ::testing::TestWithParam<BlockCase> {};

// Training form vs deployed form, contiguous: the fused conv holds the reference's name.
TEST_P(ReparamBlocks, ReparameterizedMatchesTrainingForm) {
  const BlockCase& c = GetParam();
  manual_seed(11);
  Generator gen(12);
  const auto block = c.make();
  randomize_block(*block, gen);
  const Tensor x = randn(c.input, {}, gen);
  const Tensor expected = (*block)(x);
  const std::int64_t training_flops = block->flops(c.input);

  EXPECT_FALSE(block->is_reparameterized());
  block->reparameterize();
  ASSERT_TRUE(block->is_reparameterized());
  const auto conv = block->deployed_conv();
  ASSERT_NE(conv, nullptr);
  EXPECT_TRUE(conv->has_bias());
  // Only the deployed conv holds parameters now, under "<deploy name>.weight" / ".bias".
  const StateDict state = block->state_dict();
  ASSERT_EQ(state.size(), 2u);
  EXPECT_TRUE(state.contains(block->deploy_name() + ".weight"));
  EXPECT_TRUE(state.contains(block->deploy_name() + ".bias"));
  const Tensor actual = (*block)(x);
  EXPECT_TRUE(testing::model_close(actual, expected));
  // One conv with bias costs less than the branches it replaced.
  EXPECT_LT(block->flops(c.input), training_flops);
}

// The same with the model in channels_last (convert_conv2d_weight_memory_format before the
// fusion): the fused weight stays channels_last and the output is channels_last.
TEST_P(ReparamBlocks, ReparameterizedMatchesTrainingFormChannelsLast) {
  const BlockCase& c = GetParam();
  manual_seed(13);
  Generator gen(14);
  const auto reference = c.make();
  randomize_block(*reference, gen);
  const Tensor x = randn(c.input, {}, gen);
  const Tensor expected = (*reference)(x);

  const auto block = c.make();
  block->load_state_dict(reference->state_dict());
  nn::utils::convert_conv2d_weight_memory_format(*block, MemoryFormat::ChannelsLast);
  const Tensor x_cl = x.contiguous(MemoryFormat::ChannelsLast);
  EXPECT_TRUE(testing::model_close((*block)(x_cl), expected));
  block->reparameterize();
  EXPECT_TRUE(block->deployed_conv()->weight().is_contiguous(MemoryFormat::ChannelsLast));
  const Tensor actual = (*block)(x_cl);
  EXPECT_TRUE(actual.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::model_close(actual, expected));
  // An NCHW input into the channels_last model: the same numbers.
  EXPECT_TRUE(testing::model_close((*block)(x), expected));
}

// A second reparameterize() changes nothing: the same module, bit-identical output.
TEST_P(ReparamBlocks, ReparameterizeIsIdempotent) {
  const BlockCase& c = GetParam();
  manual_seed(15);
  Generator gen(16);
  const auto block = c.make();
  randomize_block(*block, gen);
  const Tensor x = randn(c.input, {}, gen);
  block->reparameterize();
  const auto conv = block->deployed_conv();
  const Tensor first = (*block)(x);
  block->reparameterize();
  EXPECT_EQ(block->deployed_conv(), conv);
  EXPECT_TRUE(testing::all_close((*block)(x), first, testing::Tolerance::exact()));
  // equivalent_kernel() of the deployed form is the deployed conv itself.
  EXPECT_TRUE(block->equivalent_kernel().weight.is_same(conv->weight()));
}

// A block built with deploy(true) has the deployed form's names and shapes, so the fused
// state_dict loads into it by name and computes the same (bit-identical: same kernel).
TEST_P(ReparamBlocks, DeployFormLoadsTheFusedStateDict) {
  const BlockCase& c = GetParam();
  manual_seed(17);
  Generator gen(18);
  const auto block = c.make();
  randomize_block(*block, gen);
  block->reparameterize();
  const Tensor x = randn(c.input, {}, gen);
  const Tensor expected = (*block)(x);

  const auto deployed = c.make();
  // Rebuild the same options with deploy(true): each block's options() has the setter.
  std::shared_ptr<RepBlock> fresh;
  if (auto b = std::dynamic_pointer_cast<reparam::QARepVGGBlock>(deployed))
    fresh = std::make_shared<reparam::QARepVGGBlock>(RepVGGBlockOptions(b->options()).deploy(true));
  else if (auto b1 = std::dynamic_pointer_cast<reparam::RepVGGBlock>(deployed))
    fresh = std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(b1->options()).deploy(true));
  else if (auto b2 = std::dynamic_pointer_cast<reparam::ACBlock>(deployed))
    fresh = std::make_shared<reparam::ACBlock>(ACBlockOptions(b2->options()).deploy(true));
  else if (auto b3 = std::dynamic_pointer_cast<reparam::DiverseBranchBlock>(deployed))
    fresh = std::make_shared<reparam::DiverseBranchBlock>(
        DiverseBranchBlockOptions(b3->options()).deploy(true));
  else if (auto b4 = std::dynamic_pointer_cast<reparam::MobileOneBlock>(deployed))
    fresh = std::make_shared<reparam::MobileOneBlock>(
        MobileOneBlockOptions(b4->options()).deploy(true));
  else if (auto b5 = std::dynamic_pointer_cast<reparam::RepConv>(deployed))
    fresh = std::make_shared<reparam::RepConv>(RepConvOptions(b5->options()).deploy(true));
  ASSERT_NE(fresh, nullptr);
  EXPECT_TRUE(fresh->is_reparameterized());
  fresh->load_state_dict(block->state_dict());
  EXPECT_TRUE(testing::all_close((*fresh)(x), expected, testing::Tolerance::exact()));
}

INSTANTIATE_TEST_SUITE_P(Blocks, ReparamBlocks, ::testing::ValuesIn(block_cases()),
                         [](const ::testing::TestParamInfo<BlockCase>& param) {
                           return param.param.name;
                         });

// ---- state_dict names: the reference implementations' keys, in their order ----------------

std::vector<std::string> keys_of(const nn::Module& m) {
  std::vector<std::string> keys;
  for (const auto& [name, tensor] : m.state_dict()) keys.push_back(name);
  return keys;
}

std::vector<std::string> bn_keys(const std::string& prefix) {
  return {prefix + ".weight", prefix + ".bias", prefix + ".running_mean", prefix + ".running_var",
          prefix + ".num_batches_tracked"};
}

std::vector<std::string> concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// RepVGG repvgg.py: __init__ registers nonlinearity, se, rbr_identity, rbr_dense, rbr_1x1.
TEST(ReparamBlockNames, RepVGGBlock) {
  reparam::RepVGGBlock with_identity(RepVGGBlockOptions(4, 4));
  EXPECT_EQ(keys_of(with_identity), concat({bn_keys("rbr_identity"),
                                            {"rbr_dense.conv.weight"},
                                            bn_keys("rbr_dense.bn"),
                                            {"rbr_1x1.conv.weight"},
                                            bn_keys("rbr_1x1.bn")}));
  // in != out or stride 2: no identity branch at all.
  reparam::RepVGGBlock widen(RepVGGBlockOptions(4, 8));
  EXPECT_EQ(widen.child("rbr_identity"), nullptr);
  reparam::RepVGGBlock strided(RepVGGBlockOptions(4, 4).stride(2));
  EXPECT_EQ(strided.child("rbr_identity"), nullptr);
  EXPECT_EQ(keys_of(strided), concat({{"rbr_dense.conv.weight"},
                                      bn_keys("rbr_dense.bn"),
                                      {"rbr_1x1.conv.weight"},
                                      bn_keys("rbr_1x1.bn")}));
  // The children the reference lists (named_children), in its order.
  std::vector<std::string> children;
  for (const auto& [name, m] : with_identity.named_children()) children.push_back(name);
  EXPECT_EQ(children, (std::vector<std::string>{"nonlinearity", "se", "rbr_identity", "rbr_dense",
                                                "rbr_1x1"}));
  reparam::RepVGGBlock deployed(RepVGGBlockOptions(4, 4).deploy(true));
  EXPECT_EQ(keys_of(deployed),
            (std::vector<std::string>{"rbr_reparam.weight", "rbr_reparam.bias"}));
  // The 1×1 branch: padding − K/2.
  const auto pointwise = std::dynamic_pointer_cast<nn::Conv2d>(
      std::dynamic_pointer_cast<reparam::NamedSequential>(with_identity.child("rbr_1x1"))
          ->child("conv"));
  EXPECT_EQ(pointwise->options().padding().explicit_pads(), (Pads2d{0, 0, 0, 0}));
}

// YOLOv6 common.py QARepVGGBlock: rbr_identity is an Identity, rbr_1x1 a bare Conv2d, bn last.
TEST(ReparamBlockNames, QARepVGGBlock) {
  reparam::QARepVGGBlock block(RepVGGBlockOptions(4, 4));
  EXPECT_EQ(
      keys_of(block),
      concat(
          {{"rbr_dense.conv.weight"}, bn_keys("rbr_dense.bn"), {"rbr_1x1.weight"}, bn_keys("bn")}));
  ASSERT_NE(block.child("rbr_identity"), nullptr);
  EXPECT_EQ(block.child("rbr_identity")->type_name(), "Identity");
  reparam::QARepVGGBlock strided(RepVGGBlockOptions(4, 4).stride(2));
  EXPECT_EQ(strided.child("rbr_identity"), nullptr);
}

// ACNet acb.py: square_conv, square_bn, ver_conv, hor_conv, ver_bn, hor_bn; deploy fused_conv.
TEST(ReparamBlockNames, ACBlock) {
  reparam::ACBlock block(ACBlockOptions(4, 6, 3));
  EXPECT_EQ(keys_of(block), concat({{"square_conv.weight"},
                                    bn_keys("square_bn"),
                                    {"ver_conv.weight"},
                                    {"hor_conv.weight"},
                                    bn_keys("ver_bn"),
                                    bn_keys("hor_bn")}));
  // use_affine=False: the BNs keep only their buffers.
  reparam::ACBlock no_affine(ACBlockOptions(4, 6, 3).use_affine(false));
  EXPECT_EQ(keys_of(no_affine),
            (std::vector<std::string>{
                "square_conv.weight", "square_bn.running_mean", "square_bn.running_var",
                "square_bn.num_batches_tracked", "ver_conv.weight", "hor_conv.weight",
                "ver_bn.running_mean", "ver_bn.running_var", "ver_bn.num_batches_tracked",
                "hor_bn.running_mean", "hor_bn.running_var", "hor_bn.num_batches_tracked"}));
  reparam::ACBlock deployed(ACBlockOptions(4, 6, 3).deploy(true));
  EXPECT_EQ(keys_of(deployed), (std::vector<std::string>{"fused_conv.weight", "fused_conv.bias"}));
  // The reference's paddings: hor (p − K/2, p), ver (p, p − K/2); below zero a crop.
  const auto pads = [](const reparam::ACBlock& b, const std::string& name) {
    return std::dynamic_pointer_cast<nn::Conv2d>(b.child(name))
        ->options()
        .padding()
        .explicit_pads();
  };
  EXPECT_EQ(pads(block, "hor_conv"), (Pads2d{0, 1, 0, 1}));
  EXPECT_EQ(pads(block, "ver_conv"), (Pads2d{1, 0, 1, 0}));
  reparam::ACBlock crop(ACBlockOptions(4, 4, 5).padding(1));
  EXPECT_EQ(crop.crop(), 1);
  EXPECT_EQ(pads(crop, "hor_conv"), (Pads2d{0, 1, 0, 1}));
  EXPECT_EQ(pads(crop, "ver_conv"), (Pads2d{1, 0, 1, 0}));
}

// DBB diversebranchblock.py: nonlinear, dbb_origin, dbb_avg, dbb_1x1, dbb_1x1_kxk.
TEST(ReparamBlockNames, DiverseBranchBlock) {
  reparam::DiverseBranchBlock block(DiverseBranchBlockOptions(4, 6, 3));
  EXPECT_EQ(keys_of(block), concat({{"dbb_origin.conv.weight"},
                                    bn_keys("dbb_origin.bn"),
                                    {"dbb_avg.conv.weight"},
                                    bn_keys("dbb_avg.bn.bn"),
                                    bn_keys("dbb_avg.avgbn"),
                                    {"dbb_1x1.conv.weight"},
                                    bn_keys("dbb_1x1.bn"),
                                    {"dbb_1x1_kxk.idconv1.weight"},
                                    bn_keys("dbb_1x1_kxk.bn1.bn"),
                                    {"dbb_1x1_kxk.conv2.weight"},
                                    bn_keys("dbb_1x1_kxk.bn2")}));
  // Depthwise (groups == out): no 1×1 branch, the average pool on x, internal width 2·in.
  reparam::DiverseBranchBlock depthwise(DiverseBranchBlockOptions(4, 4, 3).groups(4));
  EXPECT_EQ(keys_of(depthwise), concat({{"dbb_origin.conv.weight"},
                                        bn_keys("dbb_origin.bn"),
                                        bn_keys("dbb_avg.avgbn"),
                                        {"dbb_1x1_kxk.conv1.weight"},
                                        bn_keys("dbb_1x1_kxk.bn1.bn"),
                                        {"dbb_1x1_kxk.conv2.weight"},
                                        bn_keys("dbb_1x1_kxk.bn2")}));
  const auto conv1 = std::dynamic_pointer_cast<nn::Conv2d>(
      std::dynamic_pointer_cast<reparam::NamedSequential>(depthwise.child("dbb_1x1_kxk"))
          ->child("conv1"));
  EXPECT_EQ(conv1->weight().sizes(), (Shape{8, 1, 1, 1}));
  reparam::DiverseBranchBlock deployed(DiverseBranchBlockOptions(4, 6, 3).deploy(true));
  EXPECT_EQ(keys_of(deployed),
            (std::vector<std::string>{"dbb_reparam.weight", "dbb_reparam.bias"}));
}

// ml-mobileone mobileone.py: se, activation, rbr_skip, rbr_conv (ModuleList), rbr_scale.
TEST(ReparamBlockNames, MobileOneBlock) {
  reparam::MobileOneBlock block(MobileOneBlockOptions(4, 4, 3).groups(4).num_conv_branches(2));
  EXPECT_EQ(keys_of(block), concat({bn_keys("rbr_skip"),
                                    {"rbr_conv.0.conv.weight"},
                                    bn_keys("rbr_conv.0.bn"),
                                    {"rbr_conv.1.conv.weight"},
                                    bn_keys("rbr_conv.1.bn"),
                                    {"rbr_scale.conv.weight"},
                                    bn_keys("rbr_scale.bn")}));
  // Pointwise (K = 1): no scale branch.
  reparam::MobileOneBlock pointwise(MobileOneBlockOptions(4, 8, 1));
  EXPECT_EQ(keys_of(pointwise), concat({{"rbr_conv.0.conv.weight"}, bn_keys("rbr_conv.0.bn")}));
  reparam::MobileOneBlock deployed(MobileOneBlockOptions(4, 4, 3).deploy(true));
  EXPECT_EQ(keys_of(deployed),
            (std::vector<std::string>{"reparam_conv.weight", "reparam_conv.bias"}));
}

// ultralytics RepConv: act, bn, conv1 (Conv: conv, bn, act), conv2; deploy conv.
TEST(ReparamBlockNames, RepConv) {
  reparam::RepConv block(RepConvOptions(4, 4).bn(true));
  EXPECT_EQ(keys_of(block), concat({bn_keys("bn"),
                                    {"conv1.conv.weight"},
                                    bn_keys("conv1.bn"),
                                    {"conv2.conv.weight"},
                                    bn_keys("conv2.bn")}));
  EXPECT_EQ(block.child("act")->type_name(), "SiLU");
  EXPECT_EQ(block.child("conv1")->type_name(), "Conv");
  reparam::RepConv no_identity(RepConvOptions(4, 4));
  EXPECT_EQ(no_identity.child("bn"), nullptr);
  reparam::RepConv deployed(RepConvOptions(4, 4).deploy(true));
  EXPECT_EQ(keys_of(deployed), (std::vector<std::string>{"conv.weight", "conv.bias"}));
}

// ---- preconditions ---------------------------------------------------------------------------

// Runs `fn`, expecting refold::Error with `expected`, and checks the block did not change: still
// in training form with the same output.
void expect_refused(RepBlock& block, const Tensor& x, const std::string& expected) {
  const Tensor before = block(x);
  EXPECT_TRUE(throws_error([&] { block.reparameterize(); }, expected));
  EXPECT_FALSE(block.is_reparameterized());
  EXPECT_TRUE(testing::all_close(block(x), before, testing::Tolerance::exact()));
}

TEST(ReparamBlockPreconditions, MismatchedBranchesAreRefused) {
  manual_seed(21);
  const Tensor x = randn({1, 4, 6, 6});
  const auto conv_bn = [](nn::Conv2dOptions o) { return reparam::conv_bn(o); };
  {  // stride: a 1×1 branch with stride 2 next to a stride-1 3×3 (and no identity, 4 → 8)
    reparam::RepVGGBlock block(RepVGGBlockOptions(4, 8));
    block.replace_child("rbr_1x1", conv_bn(nn::Conv2dOptions(4, 8, 1).stride(2)));
    EXPECT_TRUE(throws_error([&] { block.reparameterize(); },
                             "RepVGGBlock: branch mismatch: rbr_1x1.conv has stride (2, 2) but "
                             "rbr_dense.conv has (1, 1)"));
    EXPECT_FALSE(block.is_reparameterized());
  }
  {  // groups
    reparam::RepVGGBlock block(RepVGGBlockOptions(4, 4));
    block.replace_child("rbr_1x1", conv_bn(nn::Conv2dOptions(4, 4, 1).groups(2)));
    expect_refused(
        block, x,
        "RepVGGBlock: branch mismatch: rbr_1x1.conv has groups 2 but rbr_dense.conv has 1");
  }
  {  // padding: with the 3×3 padded by 2, a 1×1 with padding 0 reads a window off its centre
    reparam::RepVGGBlock block(RepVGGBlockOptions(4, 6).padding(2));
    block.replace_child("rbr_1x1", conv_bn(nn::Conv2dOptions(4, 6, 1).padding(0)));
    // Output sizes differ too, so only reparameterize is checked here.
    EXPECT_TRUE(
        throws_error([&] { block.reparameterize(); },
                     "RepVGGBlock: rbr_1x1.conv: branch mismatch: a 1x1 branch with padding"));
    EXPECT_FALSE(block.is_reparameterized());
  }
  {  // asymmetric padding in ACNet's horizontal branch
    reparam::ACBlock block(ACBlockOptions(4, 4, 3));
    block.replace_child("hor_conv",
                        std::make_shared<nn::Conv2d>(nn::Conv2dOptions(4, 4, {1, 3})
                                                         .padding(Padding2d::asymmetric(0, 2, 0, 0))
                                                         .bias(false)));
    expect_refused(block, x, "ACBlock: hor_conv: branch mismatch");
  }
  {  // dilation: a vertical branch without the square conv's dilation
    reparam::ACBlock block(ACBlockOptions(4, 4, 3).dilation(2).padding(2));
    block.replace_child(
        "ver_conv",
        std::make_shared<nn::Conv2d>(nn::Conv2dOptions(4, 4, {3, 1}).padding({2, 0}).bias(false)));
    EXPECT_TRUE(throws_error([&] { block.reparameterize(); },
                             "ACBlock: branch mismatch: ver_conv has dilation (1, 1) but "
                             "square_conv has (2, 2)"));
  }
  {  // out_channels of a MobileOne branch
    reparam::MobileOneBlock block(MobileOneBlockOptions(4, 4, 3).num_conv_branches(2));
    auto list = std::dynamic_pointer_cast<reparam::ModuleList>(block.child("rbr_conv"));
    list->replace_child("1", conv_bn(nn::Conv2dOptions(4, 4, 3).padding(1).stride(2)));
    EXPECT_TRUE(throws_error([&] { block.reparameterize(); },
                             "MobileOneBlock: branch mismatch: rbr_conv.1.conv has stride (2, 2)"));
  }
  {  // DBB's K×K conv after a BNAndPad must not pad again
    reparam::DiverseBranchBlock block(DiverseBranchBlockOptions(4, 4, 3).groups(4));
    auto seq = std::dynamic_pointer_cast<reparam::NamedSequential>(block.child("dbb_1x1_kxk"));
    seq->replace_child("conv2", std::make_shared<nn::Conv2d>(
                                    nn::Conv2dOptions(8, 4, 3).groups(4).padding(1).bias(false)));
    EXPECT_TRUE(
        throws_error([&] { block.reparameterize(); },
                     "DiverseBranchBlock: branch mismatch: dbb_1x1_kxk.conv2 must have padding 0"));
    EXPECT_FALSE(block.is_reparameterized());
  }
}

TEST(ReparamBlockPreconditions, IdentityNeedsStrideOneAndEqualChannels) {
  manual_seed(22);
  // Built with an identity (4 → 4, stride 1), then both conv branches swapped for stride-2 ones:
  // the identity no longer matches the output.
  reparam::RepVGGBlock block(RepVGGBlockOptions(4, 4));
  block.replace_child("rbr_dense",
                      reparam::conv_bn(nn::Conv2dOptions(4, 4, 3).padding(1).stride(2)));
  block.replace_child("rbr_1x1", reparam::conv_bn(nn::Conv2dOptions(4, 4, 1).stride(2)));
  EXPECT_TRUE(throws_error([&] { block.reparameterize(); },
                           "RepVGGBlock: identity branch rbr_identity needs stride 1, the block "
                           "has stride (2, 2)"));
  // ... and with in != out.
  reparam::MobileOneBlock mobile(MobileOneBlockOptions(4, 4, 3));
  auto list = std::dynamic_pointer_cast<reparam::ModuleList>(mobile.child("rbr_conv"));
  list->replace_child("0", reparam::conv_bn(nn::Conv2dOptions(4, 8, 3).padding(1)));
  mobile.replace_child("rbr_scale", reparam::conv_bn(nn::Conv2dOptions(4, 8, 1)));
  EXPECT_TRUE(throws_error([&] { mobile.reparameterize(); },
                           "MobileOneBlock: identity branch rbr_skip needs in_channels == "
                           "out_channels, the block has 4 and 8"));
}

TEST(ReparamBlockPreconditions, BranchesMustBeWhatTheFoldAssumes) {
  manual_seed(23);
  const Tensor x = randn({1, 4, 5, 5});
  {  // a branch swapped for something else entirely
    reparam::RepVGGBlock block(RepVGGBlockOptions(4, 4));
    block.replace_child("rbr_dense", std::make_shared<nn::ReLU>());
    EXPECT_TRUE(
        throws_error([&] { block.reparameterize(); }, "RepVGGBlock: child 'rbr_dense' is a ReLU"));
  }
  {  // a RepConv branch with its own activation is not linear
    reparam::RepConv block(RepConvOptions(4, 4));
    block.replace_child("conv2",
                        reparam::conv_bn(nn::Conv2dOptions(4, 4, 1), std::make_shared<nn::SiLU>()));
    expect_refused(block, x,
                   "RepConv: conv2 must hold exactly 'conv', 'bn' to be fused, found 'conv' "
                   "(Conv2d), 'bn' (BatchNorm2d), 'act' (SiLU)");
  }
  {  // invalid BN statistics name the block, the branch and the channel
    reparam::RepVGGBlock block(RepVGGBlockOptions(4, 4));
    auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(
        std::dynamic_pointer_cast<reparam::NamedSequential>(block.child("rbr_1x1"))->child("bn"));
    bn->running_var().set({2}, -0.5f);
    EXPECT_TRUE(
        throws_error([&] { block.reparameterize(); },
                     "RepVGGBlock: rbr_1x1: fold_batch_norm: running_var[2] = -0.5 is negative"));
    EXPECT_FALSE(block.is_reparameterized());
  }
  {  // DBB's average pool must be a convolution
    reparam::DiverseBranchBlock block(DiverseBranchBlockOptions(4, 4, 3).groups(4));
    auto seq = std::dynamic_pointer_cast<reparam::NamedSequential>(block.child("dbb_avg"));
    seq->replace_child("avg",
                       std::make_shared<nn::AvgPool2d>(
                           nn::AvgPool2dOptions(3).stride(1).padding(1).count_include_pad(false)));
    expect_refused(block, x, "DiverseBranchBlock: dbb_avg.avg is not a convolution");
  }
}

TEST(ReparamBlockPreconditions, BadOptions) {
  using reparam::ACBlock;
  using reparam::DiverseBranchBlock;
  using reparam::MobileOneBlock;
  using reparam::QARepVGGBlock;
  using reparam::RepConv;
  using reparam::RepVGGBlock;
  const auto build = [](auto make) { return [make] { (void)make(); }; };
  EXPECT_TRUE(throws_error(
      build([] { return std::make_shared<RepVGGBlock>(RepVGGBlockOptions(4, 4).kernel_size(4)); }),
      "RepVGGBlock: kernel_size (4) must be odd"));
  EXPECT_TRUE(throws_error(
      build([] { return std::make_shared<RepVGGBlock>(RepVGGBlockOptions(4, 4).padding(0)); }),
      "RepVGGBlock: padding (0) must be at least kernel_size / 2 (1)"));
  EXPECT_TRUE(throws_error(
      build([] { return std::make_shared<RepVGGBlock>(RepVGGBlockOptions(4, 4).padding(2)); }),
      "RepVGGBlock: padding (2) must be kernel_size / 2 (1) when the block has an identity"));
  EXPECT_TRUE(throws_error(
      build([] { return std::make_shared<QARepVGGBlock>(RepVGGBlockOptions(4, 6).groups(4)); }),
      "QARepVGGBlock: groups (4) must divide in_channels (4) and out_channels (6)"));
  EXPECT_TRUE(throws_error(build([] {
                             return std::make_shared<DiverseBranchBlock>(
                                 DiverseBranchBlockOptions(4, 4, 3).padding(2));
                           }),
                           "DiverseBranchBlock: padding (2) must be kernel_size / 2 (1)"));
  EXPECT_TRUE(throws_error(build([] {
                             return std::make_shared<MobileOneBlock>(
                                 MobileOneBlockOptions(4, 4, 3).num_conv_branches(0));
                           }),
                           "MobileOneBlock: num_conv_branches (0) must be at least 1"));
  EXPECT_TRUE(throws_error(build([] {
                             return std::make_shared<MobileOneBlock>(
                                 MobileOneBlockOptions(4, 4, 3).padding(0));
                           }),
                           "MobileOneBlock: padding (0) must be kernel_size / 2 (1)"));
  EXPECT_TRUE(throws_error(build([] { return std::make_shared<RepConv>(RepConvOptions(0, 4)); }),
                           "RepConv: c1 (0) and c2 (4) must be positive"));
  EXPECT_TRUE(throws_error(build([] { return std::make_shared<ACBlock>(ACBlockOptions(4, 4, 0)); }),
                           "ACBlock: kernel_size (0) must be positive"));
  EXPECT_TRUE(throws_error(build([] {
                             return std::make_shared<ACBlock>(
                                 ACBlockOptions(4, 4, 3).padding(1).dilation(2));
                           }),
                           "ACBlock: padding (1) below dilation * (kernel_size / 2) needs ACNet's "
                           "crop"));
}

// ---- FLOPs and the small layers -------------------------------------------------------------

// Hand counts (the convention of RepBlock::flops): 4 → 4 channels, 3×3, input [1, 4, 8, 8].
TEST(ReparamBlockFlops, RepVGGByHand) {
  reparam::RepVGGBlock block(RepVGGBlockOptions(4, 4));
  const Shape in{1, 4, 8, 8};
  const std::int64_t outputs = 1 * 4 * 8 * 8;            // 256
  const std::int64_t dense = 2 * outputs * (4 * 3 * 3);  // 18432
  const std::int64_t pointwise = 2 * outputs * 4;        // 2048
  const std::int64_t bns = 3 * 2 * outputs;              // dense, 1×1, identity BNs
  const std::int64_t sums = 2 * outputs;                 // three branches: two adds
  EXPECT_EQ(block.flops(in), dense + pointwise + bns + sums);
  block.reparameterize();
  EXPECT_EQ(block.flops(in), dense + outputs);  // one conv plus its bias
  EXPECT_TRUE(throws_error(
      [&] {
        block.flops({1, 3, 8, 8});
      },
      "RepVGGBlock: flops: input has 3 channels, Conv2d expects 4"));
}

// DBB, groups 1, 4 → 4, 3×3, input [1, 4, 6, 6]: every conv at full resolution, the pools and
// the K×K conv after BNAndPad read the 8×8 padded tensor.
TEST(ReparamBlockFlops, DiverseBranchBlockByHand) {
  reparam::DiverseBranchBlock block(DiverseBranchBlockOptions(4, 4, 3));
  const std::int64_t o = 4 * 6 * 6;  // 144 output elements
  const std::int64_t origin = 2 * o * 36 + 2 * o;
  const std::int64_t pointwise = 2 * o * 4 + 2 * o;
  const std::int64_t avg = (2 * o * 4 + 2 * o) + o * 9 + 2 * o;         // conv, bn, pool, avgbn
  const std::int64_t kxk = (2 * o * 4 + 2 * o) + (2 * o * 36 + 2 * o);  // idconv1, bn1, conv2, bn2
  const std::int64_t sums = 3 * o;
  EXPECT_EQ(block.flops({1, 4, 6, 6}), origin + pointwise + avg + kxk + sums);
}

TEST(ReparamLayers, BNAndPadFillsTheBorderWithTheBNOfZero) {
  manual_seed(24);
  Generator gen(25);
  reparam::BNAndPad layer(2, 3);
  testing::randomize(*layer.bn(), gen);
  const Tensor x = randn({2, 3, 4, 5}, {}, gen);
  const Tensor y = layer(x);
  ASSERT_EQ(y.sizes(), (Shape{2, 3, 8, 9}));
  const Tensor bn_x = (*layer.bn())(x);
  const Tensor bn_zero = (*layer.bn())(zeros({1, 3, 1, 1}));
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t c = 0; c < 3; ++c)
      for (std::int64_t h = 0; h < 8; ++h)
        for (std::int64_t w = 0; w < 9; ++w) {
          const bool inside = h >= 2 && h < 6 && w >= 2 && w < 7;
          const float expected = inside ? bn_x.at({n, c, h - 2, w - 2}) : bn_zero.at({0, c, 0, 0});
          // The interior is the BN output itself; the border its value at zero (one rounding
          // apart: refold rounds the folded constant once, the BN computes in steps).
          EXPECT_NEAR(y.at({n, c, h, w}), expected, 1e-6) << n << c << h << w;
        }
  // A channels_last input keeps its format.
  EXPECT_TRUE(
      layer(x.contiguous(MemoryFormat::ChannelsLast)).is_contiguous(MemoryFormat::ChannelsLast));
}

TEST(ReparamLayers, IdentityBasedConv1x1StartsAsTheIdentity) {
  manual_seed(26);
  reparam::IdentityBasedConv1x1 conv(6, 3);
  EXPECT_EQ(conv.weight().sizes(), (Shape{6, 2, 1, 1}));
  const Tensor x = randn({1, 6, 3, 4});
  EXPECT_TRUE(testing::all_close(conv(x), x, testing::Tolerance::exact()));
  conv.weight().fill_(0.5f);
  // (W + I)·x per group of 2 channels: each output is x_c + 0.5·(x_a + x_b) over its group.
  const Tensor y = conv(x);
  EXPECT_NEAR(y.at({0, 3, 1, 2}),
              x.at({0, 3, 1, 2}) + 0.5f * (x.at({0, 2, 1, 2}) + x.at({0, 3, 1, 2})), 1e-6);
}

TEST(ReparamLayers, ModuleListIsNotCallable) {
  reparam::ModuleList list;
  list.push_back(std::make_shared<nn::ReLU>());
  EXPECT_EQ(list.size(), 1u);
  EXPECT_TRUE(throws_error([&] { list(zeros({1})); }, "ModuleList: a ModuleList is a container"));
  EXPECT_TRUE(throws_error([&] { (void)list[3]; }, "ModuleList: index 3 out of range (size 1)"));
}

// bfloat16: the whole block converted with Module::to; the fused bf16 block against the fp32
// training form (bf16 policy: each weight, input and output rounded to 8 bits).
TEST(ReparamBlockDtypes, RepVGGInBFloat16) {
  manual_seed(27);
  Generator gen(28);
  const auto reference = std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(4, 4).groups(2));
  randomize_block(*reference, gen);
  const Tensor x = randn({1, 4, 6, 6}, {}, gen);
  const Tensor expected = (*reference)(x);
  const auto block = std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(4, 4).groups(2));
  block->load_state_dict(reference->state_dict());
  block->to(DType::BFloat16);
  block->reparameterize();
  EXPECT_EQ(block->deployed_conv()->weight().dtype(), DType::BFloat16);
  EXPECT_TRUE(testing::all_close((*block)(x.to(DType::BFloat16)).to(DType::Float32), expected,
                                 testing::Tolerance::bf16()));
}

}  // namespace
}  // namespace refold
