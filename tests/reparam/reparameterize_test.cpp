// refold::reparameterize on a model tree: which blocks it converts, which it leaves and why, the
// parameter and FLOP counts (checked against hand counts), and that the model still computes the
// same function (refold::verify, docs/testing.md's re-parameterization tolerance).
#include "refold/reparam/reparameterize.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "nn/nn_test_helpers.h"
#include "refold/nn/activation.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/container.h"
#include "refold/reparam/acnet.h"
#include "refold/reparam/layers.h"
#include "refold/reparam/repvgg.h"
#include "refold/verify.h"
#include "testing/compare.h"

namespace refold {
namespace {

using reparam::ACBlockOptions;
using reparam::RepVGGBlockOptions;
using testing::throws_error;

void randomize_batch_norms(nn::Module& model, Generator& gen) {
  model.apply([&](nn::Module& m) {
    if (auto* bn = dynamic_cast<nn::BatchNorm2d*>(&m)) testing::randomize(*bn, gen);
  });
}

// A RepVGGBlock 8 → 8 whose 1×1 branch was swapped for a grouped one: it runs, but cannot fuse.
std::shared_ptr<reparam::RepVGGBlock> mismatched_block() {
  auto block = std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(8, 8));
  block->replace_child("rbr_1x1", reparam::conv_bn(nn::Conv2dOptions(8, 8, 1).groups(2)));
  return block;
}

//   0    RepVGGBlock 4 → 4            converted
//   1    RepVGGBlock 4 → 8, stride 2  converted
//   2    ReLU
//   3.0  ACBlock 8 → 8                converted
//   3.1  RepVGGBlock, mismatched      left: branch mismatch
//   4    RepVGGBlock, deployed        left: already re-parameterized
std::shared_ptr<nn::Sequential> make_model() {
  return std::make_shared<nn::Sequential>(
      std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(4, 4)),
      std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(4, 8).stride(2)),
      std::make_shared<nn::ReLU>(),
      std::make_shared<nn::Sequential>(std::make_shared<reparam::ACBlock>(ACBlockOptions(8, 8, 3)),
                                       mismatched_block()),
      std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(8, 8).deploy(true)));
}

// Hand counts for make_model() on a [1, 4, 8, 8] input (RepBlock::flops' convention: a conv 2
// per multiply-add + 1 per bias add, BN 2 per element, a sum of n branches n − 1 per element).
struct Expected {
  // parameters: conv weights + BN γ, β (running statistics are buffers)
  static constexpr std::int64_t repvgg_4_4_before = 8 + (144 + 8) + (16 + 8);  // id, dense, 1×1
  static constexpr std::int64_t repvgg_4_4_after = 144 + 4;
  static constexpr std::int64_t repvgg_4_8_before = (288 + 16) + (32 + 16);
  static constexpr std::int64_t repvgg_4_8_after = 288 + 8;
  static constexpr std::int64_t acb_before = (576 + 16) + (192 + 16) + (192 + 16);
  static constexpr std::int64_t acb_after = 576 + 8;
  static constexpr std::int64_t mismatched = 16 + (576 + 16) + (32 + 16);  // 1×1 groups 2: 8·4
  static constexpr std::int64_t deployed = 576 + 8;
  // FLOPs. Block 0: output 4·8·8 = 256 elements; block 1: 8·4·4 = 128; blocks 3.x and 4: 128.
  static constexpr std::int64_t o0 = 256, o1 = 128;
  static constexpr std::int64_t flops0_before = 2 * o0 * 36 + 2 * o0 * 4 + 3 * 2 * o0 + 2 * o0;
  static constexpr std::int64_t flops0_after = 2 * o0 * 36 + o0;
  static constexpr std::int64_t flops1_before = 2 * o1 * 36 + 2 * o1 * 4 + 2 * 2 * o1 + o1;
  static constexpr std::int64_t flops1_after = 2 * o1 * 36 + o1;
  static constexpr std::int64_t acb_flops_before =
      2 * o1 * 72 + 2 * o1 * 24 + 2 * o1 * 24 + 3 * 2 * o1 + 2 * o1;
  static constexpr std::int64_t acb_flops_after = 2 * o1 * 72 + o1;
  static constexpr std::int64_t mismatched_flops = 2 * o1 * 72 + 2 * o1 * 4 + 3 * 2 * o1 + 2 * o1;
  static constexpr std::int64_t deployed_flops = 2 * o1 * 72 + o1;
};

TEST(Reparameterize, ConvertsEveryBlockAndReports) {
  manual_seed(31);
  Generator gen(32);
  const auto original = make_model();
  randomize_batch_norms(*original, gen);
  const auto model = make_model();
  model->load_state_dict(original->state_dict());

  const ReparamReport report = reparameterize(*model, {Shape{1, 4, 8, 8}});

  ASSERT_EQ(report.converted.size(), 3u);
  EXPECT_EQ(report.converted[0].path, "0");
  EXPECT_EQ(report.converted[0].type, "RepVGGBlock");
  EXPECT_EQ(report.converted[1].path, "1");
  EXPECT_EQ(report.converted[2].path, "3.0");
  EXPECT_EQ(report.converted[2].type, "ACBlock");
  ASSERT_EQ(report.left_as_is.size(), 2u);
  EXPECT_EQ(report.left_as_is[0].path, "3.1");
  EXPECT_EQ(report.left_as_is[0].reason,
            "RepVGGBlock: branch mismatch: rbr_1x1.conv has groups 2 but rbr_dense.conv has 1");
  EXPECT_EQ(report.left_as_is[1].path, "4");
  EXPECT_EQ(report.left_as_is[1].reason, "already re-parameterized");

  using E = Expected;
  EXPECT_EQ(report.converted[0].parameters_before, E::repvgg_4_4_before);
  EXPECT_EQ(report.converted[0].parameters_after, E::repvgg_4_4_after);
  EXPECT_EQ(report.converted[1].parameters_before, E::repvgg_4_8_before);
  EXPECT_EQ(report.converted[1].parameters_after, E::repvgg_4_8_after);
  EXPECT_EQ(report.converted[2].parameters_before, E::acb_before);
  EXPECT_EQ(report.converted[2].parameters_after, E::acb_after);
  EXPECT_EQ(report.parameters_before, E::repvgg_4_4_before + E::repvgg_4_8_before + E::acb_before +
                                          E::mismatched + E::deployed);
  EXPECT_EQ(report.parameters_after,
            E::repvgg_4_4_after + E::repvgg_4_8_after + E::acb_after + E::mismatched + E::deployed);
  EXPECT_EQ(report.parameters_after, count_parameters(*model));

  EXPECT_EQ(report.converted[0].flops_before, E::flops0_before);
  EXPECT_EQ(report.converted[0].flops_after, E::flops0_after);
  EXPECT_EQ(report.converted[1].flops_before, E::flops1_before);
  EXPECT_EQ(report.converted[1].flops_after, E::flops1_after);
  EXPECT_EQ(report.converted[2].flops_before, E::acb_flops_before);
  EXPECT_EQ(report.converted[2].flops_after, E::acb_flops_after);
  EXPECT_EQ(report.left_as_is[0].flops, E::mismatched_flops);
  EXPECT_EQ(report.left_as_is[1].flops, E::deployed_flops);
  EXPECT_EQ(report.flops_before, E::flops0_before + E::flops1_before + E::acb_flops_before +
                                     E::mismatched_flops + E::deployed_flops);
  EXPECT_EQ(report.flops_after, E::flops0_after + E::flops1_after + E::acb_flops_after +
                                    E::mismatched_flops + E::deployed_flops);

  // The blocks were converted in place, under the references' names.
  const StateDict state = model->state_dict();
  EXPECT_TRUE(state.contains("0.rbr_reparam.weight"));
  EXPECT_TRUE(state.contains("1.rbr_reparam.bias"));
  EXPECT_TRUE(state.contains("3.0.fused_conv.weight"));
  EXPECT_FALSE(state.contains("0.rbr_dense.conv.weight"));
  EXPECT_TRUE(state.contains("3.1.rbr_dense.conv.weight"));  // the refused block is untouched

  // Same function (the refused block still runs its branches).
  const VerifyResult check =
      verify(*original, *model, {randn({1, 4, 8, 8}, {}, gen), randn({2, 4, 9, 7}, {}, gen)});
  ASSERT_EQ(check.outputs.size(), 2u);
  EXPECT_TRUE(check.within()) << check.to_string();

  const std::string text = report.to_string();
  EXPECT_NE(text.find("reparameterize: 3 blocks converted, 2 left as they were"), std::string::npos)
      << text;
  EXPECT_NE(text.find("converted  3.0  ACBlock"), std::string::npos) << text;
  EXPECT_NE(text.find("left       4  RepVGGBlock  already re-parameterized"), std::string::npos)
      << text;
}

// A second pass converts nothing and changes nothing.
TEST(Reparameterize, SecondPassIsANoOp) {
  manual_seed(33);
  Generator gen(34);
  const auto model = make_model();
  randomize_batch_norms(*model, gen);
  reparameterize(*model);
  const Tensor x = randn({1, 4, 8, 8}, {}, gen);
  const Tensor first = (*model)(x);
  const ReparamReport again = reparameterize(*model);
  EXPECT_TRUE(again.converted.empty());
  ASSERT_EQ(again.left_as_is.size(), 5u);
  EXPECT_EQ(again.left_as_is[0].reason, "already re-parameterized");
  EXPECT_EQ(again.parameters_before, again.parameters_after);
  // Without an input shape there are no FLOP counts.
  EXPECT_FALSE(again.flops_before.has_value());
  EXPECT_TRUE(testing::all_close((*model)(x), first, testing::Tolerance::exact()));
}

// The model itself may be a block (path ""); a block reached twice is converted once, and its
// FLOPs count every call.
TEST(Reparameterize, RootBlockAndSharedBlock) {
  manual_seed(35);
  const auto block = std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(4, 4));
  const ReparamReport root = reparameterize(*block);
  ASSERT_EQ(root.converted.size(), 1u);
  EXPECT_EQ(root.converted[0].path, "");
  EXPECT_NE(root.to_string().find("converted  (model)  RepVGGBlock"), std::string::npos);

  const auto shared = std::make_shared<reparam::RepVGGBlock>(RepVGGBlockOptions(4, 4));
  const auto twice = std::make_shared<nn::Sequential>(shared, shared);
  const ReparamReport report = reparameterize(*twice, {Shape{1, 4, 8, 8}});
  ASSERT_EQ(report.converted.size(), 1u);
  EXPECT_TRUE(report.left_as_is.empty());
  EXPECT_EQ(report.flops_before, 2 * Expected::flops0_before);
  EXPECT_EQ(report.flops_after, 2 * Expected::flops0_after);
}

// A failed FLOP run throws before anything changes.
TEST(Reparameterize, BadInputShapeChangesNothing) {
  const auto model = make_model();
  EXPECT_TRUE(throws_error(
      [&] {
        reparameterize(*model, {Shape{1, 3, 8, 8}});
      },
      "reparameterize: running the model on input_shape [1, 3, 8, 8] to count FLOPs failed"));
  const auto first = std::dynamic_pointer_cast<reparam::RepVGGBlock>((*model)[0]);
  EXPECT_FALSE(first->is_reparameterized());
}

}  // namespace
}  // namespace refold
