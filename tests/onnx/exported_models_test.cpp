// The models of tests/data/onnx/ (exported from PyTorch by tests/data/make_onnx_models.py),
// through the whole public path: load → optimize → run → save → load. Checked against
// tests/data/onnx/EXPECTED.json: the outputs equal PyTorch's, the Conv / BatchNormalization /
// Add / ConvTranspose counts after optimization are the minimal ones, the planned layout permutes
// no more often than the minimum, and the written ONNX holds exactly the optimized graph.
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
const fs::path kModels = fs::path(REFOLD_TEST_DATA_DIR) / "onnx";

nlohmann::json expected_table() {
  std::ifstream in(kModels / "EXPECTED.json");
  return nlohmann::json::parse(in);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  const nlohmann::json table = expected_table();
  for (auto it = table.begin(); it != table.end(); ++it) names.push_back(it.key());
  return names;
}

// The ops the graph writes back to ONNX: a fused node counts as its parts.
std::map<std::string, int> exported_op_counts(const graph::Graph& g) {
  std::map<std::string, int> counts;
  std::function<void(const graph::Node&)> count = [&](const graph::Node& n) {
    if (n.parts.empty()) {
      ++counts[n.op_type];
    } else {
      for (const graph::Node& p : n.parts) count(p);
    }
  };
  for (const graph::Node& n : g.nodes()) count(n);
  return counts;
}

class ExportedModel : public ::testing::TestWithParam<std::string> {};

TEST_P(ExportedModel, OptimizesToTheMinimalGraphAndMatchesPyTorch) {
  const std::string name = GetParam();
  const nlohmann::json expected = expected_table().at(name);
  const fs::path dir = kModels / name;
  const Tensor input = onnx::load_tensor(dir / "test_data_set_0" / "input_0.pb");
  const Tensor reference = onnx::load_tensor(dir / "test_data_set_0" / "output_0.pb");

  auto g = onnx::load(dir / "model.onnx");
  const auto before = exported_op_counts(*g);
  for (const char* op : {"Conv", "BatchNormalization", "Add", "ConvTranspose"}) {
    EXPECT_EQ(before.count(op) ? before.at(op) : 0, expected["before"][op].get<int>()) << op;
  }
  EXPECT_TRUE(testing::model_close(g->run({input})[0], reference));

  passes::optimize(*g);
  g->verify();
  const auto after = exported_op_counts(*g);
  const bool stretch = expected.value("stretch", false);
  for (const char* op : {"Conv", "BatchNormalization", "Add", "ConvTranspose"}) {
    const int got = after.count(op) ? after.at(op) : 0;
    const int minimal = expected["after"][op].get<int>();
    if (stretch) {
      EXPECT_LE(got, expected["before"][op].get<int>()) << op;  // beyond issue 5's patterns
    } else {
      EXPECT_EQ(got, minimal) << op << "\n" << g->dump();
    }
  }

  reset_permute_count();
  const Tensor optimized = g->run({input})[0];
  if (!stretch) {  // the minimal permutes assume the minimal graph
    EXPECT_LE(permute_count(), expected["layout"]["permutes"].get<std::uint64_t>()) << g->dump();
  }
  EXPECT_TRUE(testing::model_close(optimized, reference));

  // What any runtime reads: the file holds the optimized graph, standard ops only.
  const fs::path written = fs::temp_directory_path() / ("refold_exported_" + name + ".onnx");
  onnx::save(*g, written);
  auto reloaded = onnx::load(written);
  EXPECT_EQ(exported_op_counts(*reloaded), after);
  EXPECT_TRUE(testing::model_close(reloaded->run({input})[0], reference));
  fs::remove(written);
}

INSTANTIATE_TEST_SUITE_P(PyTorchExports, ExportedModel, ::testing::ValuesIn(model_names()),
                         [](const auto& param_info) { return param_info.param; });

}  // namespace
}  // namespace refold
