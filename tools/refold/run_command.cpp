// `refold run MODEL.onnx --input NAME=FILE … -o DIR`: inference on given data. Inputs are .npy
// or TensorProto .pb files; each output is written as DIR/<output name>.npy.
#include <fmt/format.h>

#include <filesystem>
#include <map>

#include "commands.h"
#include "refold/error.h"
#include "refold/io/npy.h"
#include "refold/model_inputs.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"

namespace refold::cli {

namespace fs = std::filesystem;

namespace {

Tensor read_input(const fs::path& file, int declared_elem_type) {
  if (file.extension() == ".npy") return io::load_npy(file);
  if (file.extension() == ".pb") return onnx::load_tensor(file, declared_elem_type);
  throw Error(fmt::format("input file '{}': expected .npy or .pb", file.string()));
}

// An output name as a file name: path separators and the like become '_'.
std::string file_name_for(const std::string& value) {
  std::string name = value;
  for (char& c : name) {
    if (c == '/' || c == '\\' || c == ':' || c == '\0') c = '_';
  }
  if (name.empty() || name == "." || name == "..") name = "_" + name;
  return name + ".npy";
}

}  // namespace

int run_command(const RunArgs& args, std::FILE* out) {
  auto graph = onnx::load(args.model, args.load);
  std::map<std::string, std::string> given;
  for (const std::string& spec : args.inputs) {
    const auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw Error(fmt::format("--input '{}': expected NAME=FILE", spec));
    }
    if (!given.emplace(spec.substr(0, eq), spec.substr(eq + 1)).second) {
      throw Error(fmt::format("--input '{}' given twice", spec.substr(0, eq)));
    }
  }
  const InputShapes shapes = parse_input_shapes(args.input_shapes, *graph);
  std::vector<Tensor> feeds;
  for (std::size_t i = 0; i < graph->inputs.size(); ++i) {
    const graph::ValueInfo& input = graph->inputs[i];
    auto it = given.find(input.name);
    if (it == given.end()) {
      const auto shape = shapes.find(input.name);
      if (shape == shapes.end())
        throw Error(fmt::format("missing --input {}=FILE (or --input-shape {}=… for random data)",
                                input.name, input.name));
      // N(0, 1) data of that shape, seeded by the input's position.
      Generator gen(i + 1);
      feeds.push_back(randn(shape->second, {}, gen));
      continue;
    }
    if (shapes.count(input.name) != 0)
      throw Error(fmt::format("input {}: give --input or --input-shape, not both", input.name));
    feeds.push_back(read_input(it->second, input.elem_type));
    given.erase(it);
  }
  if (!given.empty()) {
    const std::string& name = given.begin()->first;
    throw Error(fmt::format("--input {}: {}", name, no_such_input(*graph, name)));
  }
  if (args.optimize) passes::optimize(*graph);
  const std::vector<Tensor> results = graph->run(feeds);
  fs::create_directories(args.output_dir);
  for (std::size_t i = 0; i < results.size(); ++i) {
    const fs::path file = fs::path(args.output_dir) / file_name_for(graph->outputs[i].name);
    io::save_npy(results[i], file);
    fmt::print(out, "{}: {} -> {}\n", graph->outputs[i].name, results[i].description(),
               file.string());
  }
  return 0;
}

}  // namespace refold::cli
