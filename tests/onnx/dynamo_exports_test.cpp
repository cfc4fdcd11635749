// The models of tests/data/onnx_dynamo/ (PyTorch's default dynamo exporter, IR 10, opset 18+;
// made by tests/data/make_dynamo_models.py): each loads with the IR and opset it was written
// with, runs as imported and optimized with PyTorch's outputs, optimizes to no more of each op
// than EXPECTED.json's "after", and is written back with the IR and opset it read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"
#include "refold/tensor.h"
#include "testing/compare.h"

namespace refold {
namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(REFOLD_TEST_DATA_DIR) / "onnx_dynamo";

nlohmann::json dynamo_expected() {
  std::ifstream in(kModels / "EXPECTED.json");
  return nlohmann::json::parse(in);
}

std::vector<std::string> dynamo_model_names() {
  std::vector<std::string> names;
  const nlohmann::json table = dynamo_expected();
  for (auto it = table.begin(); it != table.end(); ++it) names.push_back(it.key());
  return names;
}

int count_of(const passes::PipelineReport& r, const std::string& op) {
  const auto it = r.op_counts_after.find(op);
  return it == r.op_counts_after.end() ? 0 : it->second;
}

class DynamoExport : public ::testing::TestWithParam<std::string> {};

TEST_P(DynamoExport, LoadsOptimizesAndMatchesPyTorch) {
  const std::string name = GetParam();
  const nlohmann::json expected = dynamo_expected().at(name);
  const fs::path dir = kModels / name;
  const Tensor input = onnx::load_tensor(dir / "test_data_set_0" / "input_0.pb");
  const Tensor reference = onnx::load_tensor(dir / "test_data_set_0" / "output_0.pb");

  auto g = onnx::load(dir / "model.onnx");
  EXPECT_TRUE(testing::model_close(g->run({input})[0], reference));
  const passes::PipelineReport report = passes::optimize(*g);
  for (const auto& [op, before] : expected["before"].items())
    EXPECT_EQ(report.op_counts_before.at(op), before.get<int>()) << op;
  for (const auto& [op, most] : expected["after"].items())
    EXPECT_LE(count_of(report, op), most.get<int>()) << op << "\n" << g->dump();
  EXPECT_TRUE(testing::model_close(g->run({input})[0], reference));

  const fs::path written = fs::temp_directory_path() / ("refold_dynamo_" + name + ".onnx");
  onnx::save(*g, written);
  std::ifstream file(written, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  // IR 10 and the opset, as read (the header is copied, not rewritten): the first field of a
  // ModelProto is ir_version (tag 0x08) followed by its varint.
  ASSERT_GE(bytes.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x08);
  EXPECT_EQ(static_cast<int>(bytes[1]), expected["ir_version"].get<int>());
  EXPECT_TRUE(testing::model_close(onnx::load(written)->run({input})[0], reference));
  fs::remove(written);
}

INSTANTIATE_TEST_SUITE_P(PyTorchDynamo, DynamoExport, ::testing::ValuesIn(dynamo_model_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace refold
