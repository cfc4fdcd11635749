// Builds graph::Graph test models node by node, exactly as the ONNX importer does: each node
// carries its ONNX op type, attributes and input names, its constant inputs are graph
// constants, and its module comes from onnx::build_module. So a pass under test sees the real
// thing.
//
//   testing::GraphBuilder b;
//   std::string x = b.input("x", {1, 4, 8, 8});
//   std::string y = b.add(b.bn(b.conv(x, 4, 4, 3, {.pads = 1}), 4), b.bn(b.conv(x, 4, 4, 1), 4));
//   b.output(b.relu(y));
//   Tensor before = b.run(input);  ...  passes::reparameterize_branches(b.graph());
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "onnx/op_registry.h"
#include "refold/graph/graph.h"
#include "refold/op_options.h"
#include "refold/tensor.h"
#include "testing/builders.h"

namespace refold::testing {

struct ConvSpec {
  Size2d stride = 1;
  std::vector<std::int64_t> pads = {0, 0, 0, 0};  // ONNX order: top, left, bottom, right
  Size2d dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
  static std::vector<std::int64_t> same(std::int64_t p) { return {p, p, p, p}; }
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::uint64_t seed = 1, int opset = 17)
      : graph_(std::make_shared<graph::Graph>()), gen_(seed), opset_(opset) {}

  graph::Graph& graph() { return *graph_; }
  Generator& generator() { return gen_; }

  std::string input(const std::string& name, const Shape& shape) {
    graph::ValueInfo v;
    v.name = name;
    std::vector<graph::Dim> dims;
    for (std::int64_t d : shape) dims.push_back({d, ""});
    v.shape = dims;
    graph_->inputs.push_back(v);
    return name;
  }
  void output(const std::string& value) { graph_->outputs.push_back({value, 1, std::nullopt}); }

  std::string constant(const std::string& base, Tensor t) {
    const std::string name = graph_->unique_name(base);
    graph_->set_constant(name, std::move(t));
    return name;
  }

  // A node of `op_type` reading `inputs`, built by the importer's registry; returns its first
  // output "<name>_y" (further outputs "<name>_y1", … when `outputs` > 1).
  std::string node(const std::string& op_type, std::vector<std::string> inputs,
                   graph::Attributes attributes = {}, int outputs = 1) {
    graph::Node n;
    n.name = graph_->unique_name(op_type + "_" + std::to_string(++count_[op_type]));
    n.op_type = op_type;
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    for (int i = 0; i < outputs; ++i)
      n.outputs.push_back(n.name + "_y" + (i == 0 ? "" : std::to_string(i)));
    n.module = onnx::build_module({n, *graph_, opset_});
    const std::string out = n.outputs[0];
    last_node_ = n.name;
    graph_->add_node(std::move(n));
    return out;
  }
  // The name of the node added last.
  const std::string& last_node() const { return last_node_; }

  // Conv with random weights [out, in/groups, kh, kw] at PyTorch's init scale.
  std::string conv(const std::string& x, std::int64_t in, std::int64_t out, Size2d kernel,
                   const ConvSpec& spec = {}) {
    const std::int64_t fan_in = in / spec.groups * kernel.h * kernel.w;
    std::vector<std::string> ins = {
        x, constant("w", pytorch_init({out, in / spec.groups, kernel.h, kernel.w}, fan_in, gen_))};
    if (spec.bias) ins.push_back(constant("b", uniform({out}, 0.5, gen_)));
    graph::Attributes a;
    a.set("kernel_shape", std::vector<std::int64_t>{kernel.h, kernel.w});
    a.set("strides", std::vector<std::int64_t>{spec.stride.h, spec.stride.w});
    a.set("pads", spec.pads);
    a.set("dilations", std::vector<std::int64_t>{spec.dilation.h, spec.dilation.w});
    a.set("group", spec.groups);
    return node("Conv", ins, a);
  }
  // BatchNormalization with randomized statistics: γ of random sign with |γ| ∈ (0.5, 1.5),
  // β, μ ∈ (−1, 1), σ² ∈ (0.5, 2).
  std::string bn(const std::string& x, std::int64_t channels, double eps = 1e-5) {
    return node(
        "BatchNormalization",
        {x, constant("gamma", random_gamma(channels)),
         constant("beta", uniform({channels}, 1, gen_)),
         constant("mean", uniform({channels}, 1, gen_)), constant("var", variance(channels))},
        eps_attribute(eps));
  }
  // BatchNormalization over given statistics.
  std::string bn_with(const std::string& x, Tensor gamma, Tensor beta, Tensor mean, Tensor var,
                      double eps = 1e-5) {
    return node("BatchNormalization",
                {x, constant("gamma", std::move(gamma)), constant("beta", std::move(beta)),
                 constant("mean", std::move(mean)), constant("var", std::move(var))},
                eps_attribute(eps));
  }
  std::string avg_pool(const std::string& x, Size2d kernel, Size2d stride,
                       std::vector<std::int64_t> pads, bool count_include_pad = true) {
    graph::Attributes a;
    a.set("kernel_shape", std::vector<std::int64_t>{kernel.h, kernel.w});
    a.set("strides", std::vector<std::int64_t>{stride.h, stride.w});
    a.set("pads", std::move(pads));
    a.set("count_include_pad", std::int64_t{count_include_pad ? 1 : 0});
    return node("AveragePool", {x}, a);
  }
  std::string add(const std::string& a, const std::string& b) { return node("Add", {a, b}); }
  std::string mul(const std::string& a, const std::string& b) { return node("Mul", {a, b}); }
  std::string relu(const std::string& x) { return node("Relu", {x}); }
  std::string sigmoid(const std::string& x) { return node("Sigmoid", {x}); }
  std::string identity(const std::string& x) { return node("Identity", {x}); }
  // Sums values left to right: Add(Add(v0, v1), v2)…
  std::string sum(const std::vector<std::string>& values) {
    std::string acc = values.at(0);
    for (std::size_t i = 1; i < values.size(); ++i) acc = add(acc, values[i]);
    return acc;
  }

  // A random input for graph input `index`.
  Tensor random_input(std::size_t index = 0) {
    Shape shape;
    for (const graph::Dim& d : *graph_->inputs.at(index).shape) shape.push_back(d.value);
    return uniform(shape, 1, gen_);
  }
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) { return graph_->run(inputs); }

  // op_type → number of nodes.
  std::map<std::string, int> op_counts() const {
    std::map<std::string, int> counts;
    for (const graph::Node& n : graph_->nodes()) ++counts[n.op_type];
    return counts;
  }
  int count(const std::string& op_type) const {
    const auto c = op_counts();
    const auto it = c.find(op_type);
    return it == c.end() ? 0 : it->second;
  }

 private:
  static graph::Attributes eps_attribute(double eps) {
    graph::Attributes a;
    a.set("epsilon", static_cast<float>(eps));
    return a;
  }
  Tensor random_gamma(std::int64_t channels) {
    std::vector<float> v;
    for (std::int64_t i = 0; i < channels; ++i) {
      const double m = 0.5 + gen_.uniform();
      v.push_back(static_cast<float>(gen_.uniform() < 0.5 ? -m : m));
    }
    return values(v, {channels});
  }
  Tensor variance(std::int64_t channels) {
    std::vector<float> v;
    for (std::int64_t i = 0; i < channels; ++i)
      v.push_back(static_cast<float>(0.5 + 1.5 * gen_.uniform()));
    return values(v, {channels});
  }

  std::shared_ptr<graph::Graph> graph_;
  Generator gen_;
  int opset_;
  std::map<std::string, int> count_;
  std::string last_node_;
};

}  // namespace refold::testing
