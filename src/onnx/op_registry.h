// From an ONNX node to the Module that runs it (one builder per op type, in src/onnx/ops/).
//
// The importer calls build_module() for every node once the graph's constants are known. A
// builder validates the node's attributes and constant inputs (docs/reliability.md section F) and
// throws refold::Error with the problem and value; the importer prefixes the file and node.
// When the weights are constants the builder returns a plain nn module holding them (Conv →
// nn::Conv2d sharing the initializer tensors), so the seed's utilities reach it; when they are
// runtime inputs it returns a graph::Op that takes them at run time.
#pragma once

#include <optional>
#include <string>

#include "refold/graph/graph.h"

namespace refold::onnx {

struct BuildContext {
  const graph::Node& node;
  const graph::Graph& graph;  // constants so far: graph.is_constant(name)
  int opset = 0;              // the model's ai.onnx opset
};

// The reason `node` cannot run (unknown op, domain, or an op version refold does not
// implement), or nullopt when a builder exists for it.
std::optional<std::string> unsupported_reason(const graph::Node& node, int opset);

nn::ModulePtr build_module(const BuildContext& context);

}  // namespace refold::onnx
