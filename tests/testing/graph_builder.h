// Builds graph::Graph test models node by node, exactly as the ONNX importer does: each node
// carries its ONNX op type, attributes and input names, its constant inputs are graph
// constants, and its module comes from ops::build_module. So a pass under test sees the real
// thing. The one builder of the pass tests (tests/passes/).
//
//   testing::GraphBuilder b;
//   std::string x = b.input("x", {1, 4, 8, 8});
//   std::string c3 = b.bn(b.conv(x, 4, 4, 3, {.pads = kPad1}), 4);
//   std::string c1 = b.bn(b.conv(x, 4, 4, 1), 4);
//   b.output(b.relu(b.add(c3, c1)));
//   std::vector<Tensor> before = b.run(b.random_inputs());
//   passes::reparameterize_branches(b.graph());
//
// Nodes are named "<op_type>_<n>" (n counts that op type from 1) unless given a name, and write
// "<name>_out"; a conv's weight and bias are the constants "<name>.weight" and "<name>.bias".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "ops/op.h"
#include "refold/graph/graph.h"
#include "refold/op_options.h"
#include "refold/tensor.h"
#include "testing/builders.h"

namespace refold::testing {

// Conv geometry in ONNX terms. Designated initializers: {.name = "conv1", .pads = kPad1}.
struct ConvSpec {
  std::string name = "";  // the node's name; "" = "Conv_<n>"
  Size2d stride = 1;
  std::vector<std::int64_t> pads = {0, 0, 0, 0};  // ONNX order: top, left, bottom, right
  Size2d dilation = 1;
  std::int64_t groups = 1;
  bool bias = true;
  // p on every side: "same" padding for a (2p + 1)×(2p + 1) kernel at stride 1.
  static std::vector<std::int64_t> same(std::int64_t p) { return {p, p, p, p}; }
};

// "Same" padding of a 3×3 kernel.
inline const std::vector<std::int64_t> kPad1 = ConvSpec::same(1);

// A 1-d int64 tensor holding `v` (shapes, pads, starts, … as ONNX writes them).
inline Tensor int64s(const std::vector<std::int64_t>& v) {
  Tensor t = empty({static_cast<std::int64_t>(v.size())}, DType::Int64);
  std::int64_t* p = t.data<std::int64_t>();
  for (std::size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  return t;
}

// Node attributes in one expression: attrs({{"axis", std::int64_t{1}}, {"alpha", 0.2f}}).
inline graph::Attributes attrs(
    std::initializer_list<std::pair<std::string, graph::AttributeValue>> values) {
  graph::Attributes a;
  for (const auto& kv : values) a.set(kv.first, kv.second);
  return a;
}

class GraphBuilder {
 public:
  explicit GraphBuilder(std::uint64_t seed = 1)
      : graph_(std::make_shared<graph::Graph>()), gen_(seed) {}

  graph::Graph& graph() { return *graph_; }
  const graph::Graph& graph() const { return *graph_; }
  Generator& generator() { return gen_; }
  // The opset the nodes added from now on are built for (17 by default).
  void set_opset(int opset) { opset_ = opset; }

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

  // A constant named `base` (or `base_1`, … when taken); returns its name.
  std::string constant(const std::string& base, Tensor t) {
    const std::string name = graph_->unique_name(base);
    graph_->set_constant(name, std::move(t));
    return name;
  }

  // A node of `op_type` reading `inputs`, built by the importer's registry, named `name` (or
  // "<op_type>_<n>"); returns its output "<name>_out".
  // A node of `count` outputs (a Split), named <name>_out0, <name>_out1, …
  std::vector<std::string> node_with_outputs(const std::string& op_type,
                                             std::vector<std::string> inputs, std::size_t count,
                                             graph::Attributes attributes = {},
                                             const std::string& name = "") {
    graph::Node n;
    n.name = name.empty() ? next_name(op_type) : name;
    n.op_type = op_type;
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    for (std::size_t i = 0; i < count; ++i)
      n.outputs.push_back(n.name + "_out" + std::to_string(i));
    n.module = ops::build_module({n, *graph_, opset_});
    const std::vector<std::string> outs = n.outputs;
    last_node_ = n.name;
    graph_->add_node(std::move(n));
    return outs;
  }

  std::string node(const std::string& op_type, std::vector<std::string> inputs,
                   graph::Attributes attributes = {}, const std::string& name = "") {
    graph::Node n;
    n.name = name.empty() ? next_name(op_type) : name;
    n.op_type = op_type;
    n.inputs = std::move(inputs);
    n.attributes = std::move(attributes);
    n.outputs = {n.name + "_out"};
    n.module = ops::build_module({n, *graph_, opset_});
    const std::string out = n.outputs[0];
    last_node_ = n.name;
    graph_->add_node(std::move(n));
    return out;
  }
  // A second node running the module of node `of` (weight tying, as in a net built in C++),
  // reading `input` in place of its first input; named `name`, it writes "<name>_out".
  std::string tied(const std::string& of, const std::string& input, const std::string& name) {
    const auto index = graph_->find_node(of);
    REFOLD_CHECK(index.has_value(), "GraphBuilder: no node '{}' to tie to", of);
    graph::Node n = graph_->nodes()[*index];
    n.name = name;
    n.inputs.at(0) = input;
    n.outputs = {name + "_out"};
    const std::string out = n.outputs[0];
    last_node_ = n.name;
    graph_->add_node(std::move(n));
    return out;
  }
  // The name of the node added last.
  const std::string& last_node() const { return last_node_; }

  // Conv with random weights [out, in/groups, kh, kw] and bias [out] at PyTorch's init scale
  // (uniform in ±1/√fan_in, fan_in = in/groups·kh·kw).
  std::string conv(const std::string& x, std::int64_t in, std::int64_t out, Size2d kernel,
                   const ConvSpec& spec = {}) {
    const std::string name = spec.name.empty() ? next_name("Conv") : spec.name;
    const std::int64_t fan_in = in / spec.groups * kernel.h * kernel.w;
    std::vector<std::string> ins = {
        x, constant(name + ".weight",
                    pytorch_init({out, in / spec.groups, kernel.h, kernel.w}, fan_in, gen_))};
    if (spec.bias) ins.push_back(constant(name + ".bias", pytorch_init({out}, fan_in, gen_)));
    return node("Conv", ins,
                attrs({{"kernel_shape", std::vector<std::int64_t>{kernel.h, kernel.w}},
                       {"strides", std::vector<std::int64_t>{spec.stride.h, spec.stride.w}},
                       {"pads", spec.pads},
                       {"dilations", std::vector<std::int64_t>{spec.dilation.h, spec.dilation.w}},
                       {"group", spec.groups}}),
                name);
  }
  // BatchNormalization with randomized statistics: γ of random sign with |γ| ∈ (0.5, 1.5),
  // β, μ ∈ (−1, 1), σ² ∈ (0.5, 2).
  std::string bn(const std::string& x, std::int64_t channels, double eps = 1e-5) {
    Tensor gamma = random_gamma(channels);
    Tensor beta = uniform({channels}, 1, gen_);
    Tensor mean = uniform({channels}, 1, gen_);
    return bn_with(x, std::move(gamma), std::move(beta), std::move(mean), variance(channels), eps);
  }
  // BatchNormalization over given statistics.
  std::string bn_with(const std::string& x, Tensor gamma, Tensor beta, Tensor mean, Tensor var,
                      double eps = 1e-5) {
    const std::string name = next_name("BatchNormalization");
    return node(
        "BatchNormalization",
        {x, constant(name + ".scale", std::move(gamma)), constant(name + ".bias", std::move(beta)),
         constant(name + ".mean", std::move(mean)), constant(name + ".var", std::move(var))},
        attrs({{"epsilon", static_cast<float>(eps)}}), name);
  }
  std::string avg_pool(const std::string& x, Size2d kernel, Size2d stride,
                       std::vector<std::int64_t> pads, bool count_include_pad = true) {
    return node("AveragePool", {x},
                attrs({{"kernel_shape", std::vector<std::int64_t>{kernel.h, kernel.w}},
                       {"strides", std::vector<std::int64_t>{stride.h, stride.w}},
                       {"pads", std::move(pads)},
                       {"count_include_pad", std::int64_t{count_include_pad ? 1 : 0}}}));
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

  // A random input for graph input `index`, uniform in ±1.
  Tensor random_input(std::size_t index = 0) {
    Shape shape;
    for (const graph::Dim& d : *graph_->inputs.at(index).shape) shape.push_back(d.value);
    return uniform(shape, 1, gen_);
  }
  // One random input per graph input, in order.
  std::vector<Tensor> random_inputs() {
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < graph_->inputs.size(); ++i) in.push_back(random_input(i));
    return in;
  }
  // Runs the graph on a fresh copy of `inputs`, so that no run sees what another did to them
  // (a layout, an in-place op).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) {
    std::vector<Tensor> feeds;
    for (const Tensor& t : inputs) feeds.push_back(t.clone());
    return graph_->run(feeds);
  }

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
  // "<op_type>_<n>", the next n of that op type not taken in the graph.
  std::string next_name(const std::string& op_type) {
    return graph_->unique_name(op_type + "_" + std::to_string(++count_[op_type]));
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
  int opset_ = 17;
  std::map<std::string, int> count_;
  std::string last_node_;
};

}  // namespace refold::testing
