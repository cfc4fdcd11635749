// `refold test DIR…`: runs ONNX backend test folders — model.onnx and test_data_set_*/ holding
// input_<i>.pb / output_<j>.pb TensorProtos, bound to the graph's inputs and outputs by position
// — once as imported and once optimized, and compares with ONNX's own rule.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

#include "commands.h"
#include "refold/error.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"

namespace refold::cli {

namespace fs = std::filesystem;

namespace {

struct DataSet {
  std::string name;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
};

// input_0.pb, input_1.pb, … in numeric order (input_10 after input_9).
std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<std::pair<int, fs::path>> found;
  const std::regex pattern(prefix + "_([0-9]+)\\.pb");
  for (const auto& entry : fs::directory_iterator(dir)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (std::regex_match(name, m, pattern)) found.emplace_back(std::stoi(m[1]), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto& [index, path] : found) paths.push_back(path);
  return paths;
}

// The ONNX element type of value `i` of `values` (0 past the end): how a file bound to it reads.
int declared_type(const std::vector<graph::ValueInfo>& values, std::size_t i) {
  return i < values.size() ? values[i].elem_type : 0;
}

std::vector<DataSet> read_data_sets(const fs::path& dir, const graph::Graph& graph) {
  std::vector<DataSet> sets;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      dirs.push_back(entry.path());
  }
  std::sort(dirs.begin(), dirs.end());
  for (const fs::path& d : dirs) {
    DataSet set{d.filename().string(), {}, {}};
    for (const fs::path& p : numbered(d, "input")) {
      set.inputs.push_back(onnx::load_tensor(p, declared_type(graph.inputs, set.inputs.size())));
    }
    for (const fs::path& p : numbered(d, "output")) {
      set.outputs.push_back(onnx::load_tensor(p, declared_type(graph.outputs, set.outputs.size())));
    }
    sets.push_back(std::move(set));
  }
  if (sets.empty()) throw Error(fmt::format("no test_data_set_* folder in '{}'", dir.string()));
  return sets;
}

// ONNX's rule (onnx/backend/test/runner): same dtype and shape, |a − b| ≤ atol + rtol·|b| with
// rtol 1e-3, atol 1e-7. An optimized model has changed arithmetic (folded BatchNorm, merged
// branches), so it may also use docs/testing.md's model tolerance, 1e-4 · max(1, max|expected|).
// bfloat16 results may differ by one bfloat16 ulp (≤ 2^-7·|b|): refold rounds float32 →
// bfloat16 to nearest even, as ONNX specifies since 1.14, where ONNX 1.12's test data truncates.
std::string mismatch(const Tensor& actual, const Tensor& expected, bool optimized) {
  if (actual.dtype() != expected.dtype()) {
    return fmt::format("dtype {} vs expected {}", actual.description(), expected.description());
  }
  if (actual.sizes() != expected.sizes()) {
    return fmt::format("shape {} vs expected {}", actual.description(), expected.description());
  }
  const std::vector<float> a = actual.to_vector();
  const std::vector<float> b = expected.to_vector();
  double scale = 1;
  for (float v : b) scale = std::max(scale, std::isfinite(v) ? std::abs(double{v}) : 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    const double diff = std::abs(double{a[i]} - b[i]);
    const double rtol = expected.dtype() == DType::BFloat16 ? 1.0 / 128 : 1e-3;
    double allowed = 1e-7 + rtol * std::abs(double{b[i]});
    if (optimized) allowed = std::max(allowed, 1e-4 * scale);
    if (!(diff <= allowed) && !(a[i] == b[i])) {
      return fmt::format("element {}: {} vs expected {} (|diff| {:.3g} > {:.3g})", i, a[i], b[i],
                         diff, allowed);
    }
  }
  return {};
}

// Runs every data set; returns "" when all match, else the first problem.
std::string run_folder(const fs::path& dir, bool optimized, const onnx::LoadOptions& load) {
  auto graph = onnx::load(dir / "model.onnx", load);
  if (optimized) passes::optimize(*graph);
  for (const DataSet& set : read_data_sets(dir, *graph)) {
    std::vector<Tensor> got = graph->run(set.inputs);
    if (got.size() < set.outputs.size()) {
      return fmt::format("{}: {} outputs, expected {}", set.name, got.size(), set.outputs.size());
    }
    for (std::size_t i = 0; i < set.outputs.size(); ++i) {
      std::string problem = mismatch(got[i], set.outputs[i], optimized);
      if (!problem.empty()) return fmt::format("{} output {}: {}", set.name, i, problem);
    }
  }
  return {};
}

// "- `test_name`: reason" lines of a SKIPPED.md.
std::map<std::string, std::string> read_skip_list(const std::string& file) {
  std::map<std::string, std::string> skipped;
  if (file.empty()) return skipped;
  std::ifstream in(file);
  if (!in) throw Error(fmt::format("cannot read skip list '{}'", file));
  const std::regex line_pattern("^- `([^`]+)`: (.*)$");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_match(line, m, line_pattern)) skipped[m[1]] = m[2];
  }
  return skipped;
}

}  // namespace

int test_command(const TestArgs& args, std::FILE* out) {
  const auto skipped = read_skip_list(args.skip_list);
  int passed = 0, failed = 0, skips = 0;
  for (const std::string& d : args.dirs) {
    const fs::path dir(d);
    const std::string name =
        dir.filename().empty() ? dir.parent_path().filename().string() : dir.filename().string();
    if (auto it = skipped.find(name); it != skipped.end()) {
      ++skips;
      if (args.verbose) fmt::print(out, "SKIP {}: {}\n", name, it->second);
      continue;
    }
    std::string problem;
    for (bool optimized : {false, true}) {
      try {
        problem = run_folder(dir, optimized, args.load);
      } catch (const std::exception& e) {
        problem = e.what();
      }
      if (!problem.empty()) {
        problem = fmt::format("{}: {}", optimized ? "optimized" : "as imported", problem);
        break;
      }
    }
    if (problem.empty()) {
      ++passed;
      fmt::print(out, "PASS {}\n", name);
    } else {
      ++failed;
      fmt::print(out, "FAIL {}: {}\n", name, problem);
    }
    std::fflush(out);
  }
  fmt::print(out, "{} passed, {} failed", passed, failed);
  if (skips > 0) fmt::print(out, ", {} skipped", skips);
  fmt::print(out, "\n");
  return failed == 0 ? 0 : 1;
}

}  // namespace refold::cli
