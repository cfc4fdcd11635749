// Builds small graphs for the pass tests exactly as the importer does: ONNX op types and
// attributes, constants via graph.set_constant, modules from onnx::build_module.
//
//   GraphBuilder b;
//   auto x = b.input("x", {1, 3, 8, 8});
//   auto c = b.conv("conv1", x, 3, 8, 3);              // W, B constants; pads 1
//   auto y = b.node("Relu", {c});
//   b.output(y);
//   std::vector<Tensor> out = b.graph->run({randn({1, 3, 8, 8})});
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx/op_registry.h"
#include "refold/graph/graph.h"
#include "refold/tensor.h"
#include "testing/builders.h"

// An inline namespace of its own: tests/testing/graph_builder.h defines another
// refold::testing::GraphBuilder (for the bn-folding, re-parameterization and dead-code tests);
// without it the two classes would share mangled names in one test binary (an ODR violation).
// TODO: merge the two builders into one.
namespace refold::testing {
inline namespace pass_graph {

class GraphBuilder {
 public:
  std::shared_ptr<graph::Graph> graph = std::make_shared<graph::Graph>();
  int opset = 17;
  Generator gen{1234};

  std::string input(const std::string& name, const Shape& sizes, bool declare_shape = true) {
    graph::ValueInfo v;
    v.name = name;
    if (declare_shape) {
      std::vector<graph::Dim> dims;
      for (std::int64_t s : sizes) dims.push_back({s, ""});
      v.shape = dims;
    }
    graph->inputs.push_back(v);
    return name;
  }

  std::string constant(const std::string& name, const Tensor& t) {
    graph->set_constant(name, t);
    return name;
  }

  // A node with one output named after the node (or `outputs`), its module from the registry.
  std::string node(const std::string& op_type, const std::vector<std::string>& inputs,
                   graph::Attributes attributes = {}, std::string name = "",
                   std::vector<std::string> outputs = {}) {
    graph::Node n;
    n.name = name.empty() ? graph->unique_name(op_type) : name;
    n.op_type = op_type;
    n.inputs = inputs;
    n.outputs = outputs.empty() ? std::vector<std::string>{n.name + "_out"} : outputs;
    n.attributes = std::move(attributes);
    n.module = onnx::build_module({n, *graph, opset});
    const std::string first = n.outputs[0];
    graph->add_node(std::move(n));
    return first;
  }

  // Conv with constant W [out, in/groups, k, k] (PyTorch init scale) and bias, stride 1, "same"
  // padding for odd k.
  std::string conv(const std::string& name, const std::string& x, std::int64_t in, std::int64_t out,
                   std::int64_t k, bool bias = true, std::int64_t groups = 1) {
    const std::string w = constant(
        name + ".weight", pytorch_init({out, in / groups, k, k}, in / groups * k * k, gen));
    std::vector<std::string> inputs = {x, w};
    if (bias)
      inputs.push_back(constant(name + ".bias", pytorch_init({out}, in / groups * k * k, gen)));
    graph::Attributes a;
    a.set("kernel_shape", std::vector<std::int64_t>{k, k});
    a.set("pads", std::vector<std::int64_t>{k / 2, k / 2, k / 2, k / 2});
    if (groups != 1) a.set("group", groups);
    return node("Conv", inputs, a, name);
  }

  void output(const std::string& name) {
    graph::ValueInfo v;
    v.name = name;
    graph->outputs.push_back(v);
  }
};

// Runs a graph and returns its outputs (a fresh copy of `inputs` each time, so no run can see
// another's layout).
inline std::vector<Tensor> run_graph(graph::Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> feeds;
  for (const Tensor& t : inputs) feeds.push_back(t.clone());
  return g.run(feeds);
}

inline std::map<std::string, int> count_ops(const graph::Graph& g) {
  std::map<std::string, int> counts;
  for (const graph::Node& n : g.nodes()) ++counts[n.op_type];
  return counts;
}

}  // namespace pass_graph
}  // namespace refold::testing
