#include "refold/models/repvgg.h"

#include <gtest/gtest.h>

#include "refold/nn/batchnorm.h"
#include "refold/reparam/reparameterize.h"
#include "refold/verify.h"

namespace refold::models {
namespace {

TEST(RepVGGA0, HasTheReferenceStructureAndNames) {
  auto net = repvgg_a0(0);
  const StateDict sd = net->state_dict();
  EXPECT_TRUE(sd.contains("stage0.rbr_dense.conv.weight"));
  EXPECT_TRUE(sd.contains("stage3.13.rbr_1x1.bn.running_var"));
  EXPECT_TRUE(sd.contains("linear.weight"));
  EXPECT_FALSE(sd.contains("stage3.14.rbr_dense.conv.weight"));  // 14 blocks: 0 … 13
  EXPECT_EQ(sd.at("stage4.0.rbr_dense.conv.weight").sizes(), (Shape{1280, 192, 3, 3}));
  EXPECT_EQ(sd.at("linear.weight").sizes(), (Shape{1000, 1280}));
}

TEST(RepVGGA0, SameSeedSameModelAndBatchNormsAreRandomized) {
  auto a = repvgg_a0(3), b = repvgg_a0(3), c = repvgg_a0(4);
  const Tensor wa = a->state_dict().at("stage2.1.rbr_dense.bn.running_var");
  EXPECT_EQ(wa.to_vector(), b->state_dict().at("stage2.1.rbr_dense.bn.running_var").to_vector());
  EXPECT_NE(wa.to_vector(), c->state_dict().at("stage2.1.rbr_dense.bn.running_var").to_vector());
  for (float v : wa.to_vector()) {
    EXPECT_GE(v, 0.5f);
    EXPECT_LT(v, 1.5f);
  }
}

TEST(RepVGGA0, ReparameterizesAll22BlocksWithinTolerance) {
  RepVGGConfig small;  // A0's structure, fewer classes to keep the test quick
  small.num_classes = 10;
  manual_seed(1);
  auto original = std::make_shared<RepVGG>(small);
  randomize_batch_norms(*original, 2);
  manual_seed(1);
  auto fused = std::make_shared<RepVGG>(small);
  fused->load_state_dict(original->state_dict());
  const ReparamReport report = reparameterize(*fused);
  EXPECT_EQ(report.converted.size(), 22u) << report.to_string();
  const VerifyResult r = verify(*original, *fused, {randn({1, 3, 64, 64})});
  EXPECT_TRUE(r.within()) << r.to_string();
}

}  // namespace
}  // namespace refold::models
