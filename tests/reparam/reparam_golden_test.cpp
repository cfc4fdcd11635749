// Parity with the public reference implementations (issue 4): every golden under
// tests/data/reparam_goldens/ — written by tests/data/make_reparam_goldens.py from PyTorch
// restatements of RepVGG, YOLOv6's QARepVGG, ACNet, DBB, MobileOne and ultralytics' RepConv —
// holds a training-form state_dict under the reference's names, an input, the training output,
// the reference's fused kernel and bias, and the deployed output. refold's block must load the
// state_dict by name (same keys, same order), give the same training output, fuse to the same
// kernel, and give the same deployed output; a deploy-form block must load the deployed
// state_dict. Tolerances: docs/testing.md (outputs: model_close; the fused kernel, computed by
// torch in float32 and by refold in double: the fp32 op tolerance).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "refold/io/safetensors.h"
#include "refold/nn/activation.h"
#include "refold/nn/utils.h"
#include "refold/reparam/acnet.h"
#include "refold/reparam/dbb.h"
#include "refold/reparam/mobileone.h"
#include "refold/reparam/rep_conv.h"
#include "refold/reparam/repvgg.h"
#include "testing/compare.h"

namespace refold {
namespace {

const std::filesystem::path kGoldenDir = REFOLD_TEST_DATA_DIR "/reparam_goldens";

std::vector<std::string> golden_cases() {
  std::vector<std::string> names;
  if (std::filesystem::is_directory(kGoldenDir))
    for (const auto& entry : std::filesystem::directory_iterator(kGoldenDir))
      if (entry.path().extension() == ".safetensors") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The block a golden describes, built from its config (the constructor's arguments under
// refold's option names), in the training or the deployed form.
std::shared_ptr<reparam::RepBlock> build(const std::string& type, const nlohmann::json& c,
                                         bool deploy) {
  using namespace reparam;
  const std::int64_t in = c.at("in"), out = c.at("out"), k = c.at("kernel_size"),
                     stride = c.at("stride"), padding = c.at("padding"), groups = c.at("groups");
  if (type == "RepVGGBlock" || type == "QARepVGGBlock") {
    const auto o = RepVGGBlockOptions(in, out)
                       .kernel_size(k)
                       .stride(stride)
                       .padding(padding)
                       .groups(groups)
                       .deploy(deploy);
    if (type == "RepVGGBlock") return std::make_shared<RepVGGBlock>(o);
    return std::make_shared<QARepVGGBlock>(o);
  }
  if (type == "ACBlock")
    return std::make_shared<ACBlock>(ACBlockOptions(in, out, k)
                                         .stride(stride)
                                         .padding(padding)
                                         .groups(groups)
                                         .use_affine(c.at("use_affine"))
                                         .deploy(deploy));
  if (type == "DiverseBranchBlock") {
    auto o = DiverseBranchBlockOptions(in, out, k)
                 .stride(stride)
                 .padding(padding)
                 .groups(groups)
                 .deploy(deploy);
    if (!c.at("internal_channels_1x1_3x3").is_null())
      o.internal_channels_1x1_3x3(c.at("internal_channels_1x1_3x3"));
    if (c.at("nonlinear") == "relu") o.nonlinear(std::make_shared<nn::ReLU>());
    return std::make_shared<DiverseBranchBlock>(o);
  }
  if (type == "MobileOneBlock")
    return std::make_shared<MobileOneBlock>(MobileOneBlockOptions(in, out, k)
                                                .stride(stride)
                                                .padding(padding)
                                                .groups(groups)
                                                .num_conv_branches(c.at("num_conv_branches"))
                                                .deploy(deploy));
  if (type == "RepConv")
    return std::make_shared<RepConv>(RepConvOptions(in, out)
                                         .kernel_size(k)
                                         .stride(stride)
                                         .padding(padding)
                                         .groups(groups)
                                         .bn(c.at("bn"))
                                         .deploy(deploy));
  ADD_FAILURE() << "unknown block type " << type;
  return nullptr;
}

// The tensors named "<prefix><key>", as a state_dict of <key>s in file order.
StateDict with_prefix(const StateDict& tensors, const std::string& prefix) {
  StateDict out;
  for (const auto& [name, tensor] : tensors)
    if (name.rfind(prefix, 0) == 0) out.insert(name.substr(prefix.size()), tensor);
  return out;
}

std::vector<std::string> keys_of(const StateDict& state) {
  std::vector<std::string> keys;
  for (const auto& [name, tensor] : state) keys.push_back(name);
  return keys;
}

class ReparamGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(ReparamGolden, MatchesTheReferenceImplementation) {
  const io::SafetensorsFile file =
      io::read_safetensors_file(kGoldenDir / (GetParam() + ".safetensors"));
  const std::string type = file.metadata.at("block");
  const nlohmann::json config = nlohmann::json::parse(file.metadata.at("config"));
  SCOPED_TRACE(type + " " + config.dump());
  const StateDict& t = file.tensors;
  const Tensor& x = t.at("input");

  const auto block = build(type, config, /*deploy=*/false);
  ASSERT_NE(block, nullptr);
  const StateDict state = with_prefix(t, "state.");
  // The reference's parameter and buffer names, in the reference's order.
  EXPECT_EQ(keys_of(block->state_dict()), keys_of(state));
  block->load_state_dict(state);
  EXPECT_TRUE(testing::model_close((*block)(x), t.at("output")));

  const reparam::ConvKernel fused = block->equivalent_kernel();
  EXPECT_TRUE(testing::all_close(fused.weight, t.at("fused_weight"), testing::Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(fused.bias, t.at("fused_bias"), testing::Tolerance::op_f32()));

  block->reparameterize();
  EXPECT_TRUE(testing::model_close((*block)(x), t.at("deploy_output")));
  EXPECT_TRUE(testing::model_close((*block)(x), t.at("output")));

  // A checkpoint saved after the reference's switch to deploy loads into the deployed form.
  const auto deployed = build(type, config, /*deploy=*/true);
  const StateDict deploy_state = with_prefix(t, "deploy.");
  EXPECT_EQ(keys_of(deployed->state_dict()), keys_of(deploy_state));
  deployed->load_state_dict(deploy_state);
  EXPECT_TRUE(testing::model_close((*deployed)(x), t.at("deploy_output")));

  // The same in channels_last, converted before the fusion.
  const auto channels_last = build(type, config, /*deploy=*/false);
  channels_last->load_state_dict(state);
  nn::utils::convert_conv2d_weight_memory_format(*channels_last, MemoryFormat::ChannelsLast);
  channels_last->reparameterize();
  const Tensor y = (*channels_last)(x.contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
  EXPECT_TRUE(testing::model_close(y, t.at("deploy_output")));
}

INSTANTIATE_TEST_SUITE_P(Goldens, ReparamGolden, ::testing::ValuesIn(golden_cases()));

// Guards the parameterized test against testing nothing: every block type has goldens.
TEST(ReparamGoldenFiles, EveryBlockIsCovered) {
  std::set<std::string> types;
  for (const std::string& name : golden_cases())
    types.insert(
        io::read_safetensors_file(kGoldenDir / (name + ".safetensors")).metadata.at("block"));
  EXPECT_EQ(types, (std::set<std::string>{"ACBlock", "DiverseBranchBlock", "MobileOneBlock",
                                          "QARepVGGBlock", "RepConv", "RepVGGBlock"}));
}

}  // namespace
}  // namespace refold
