// refold::graph::Graph — a dataflow graph whose nodes hold Modules; the graph is itself a Module.
//
//   auto g = refold::onnx::load("model.onnx");                 // or build one in C++
//   refold::passes::optimize(*g);                              // BN folding, re-param, layout…
//   nn::utils::convert_conv2d_weight_memory_format(*g, MemoryFormat::ChannelsLast);  // reaches
//   std::vector<Tensor> y = g->run({x});                       // every Conv2d node's module
//
// Values are named, as in ONNX (static single assignment): a node reads values by name and
// writes new ones. A value is one of
//   - a graph input (`inputs`, fed at run time, in order),
//   - a constant (initializers and folded results, in `constants()`),
//   - a node output.
// An optional input left out is the empty name "".
//
// How a node runs (the one rule the executor, the passes and the exporter share):
//   - `node.module` is a graph::Op → op.run(the values of all inputs; "" → undefined Tensor);
//   - otherwise it is a plain single-input nn::Module (Conv2d, BatchNorm2d, ReLU, …):
//     (*module)(value of inputs[0]); the node's other inputs name the constants the module holds
//     as its parameters (the same Tensor handles), kept so the exporter writes them back.
// Either way the module obeys Module::accepts_channels_last(): an input goes contiguous first
// when it does not. That is where the layout plan's permutes happen, exactly as in a Sequential.
//
// A node made by fusing others (Conv + Relu, Conv + Add) keeps them in `parts`, in order, each
// with its own op_type/inputs/outputs/attributes/source: the exporter writes the parts, so the
// written ONNX uses only standard ops while the fused module runs in one kernel.
//
// Memory: run() drops each activation as soon as its last consumer has run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "refold/nn/module.h"
#include "refold/tensor.h"

namespace refold::graph {

// One dimension of a declared shape: a number (value ≥ 0), a symbolic name (ONNX dim_param,
// value -1) or unknown (value -1, no name).
struct Dim {
  std::int64_t value = -1;
  std::string param;
  bool is_static() const { return value >= 0; }
};

// The declared type of a value (graph inputs and outputs). `elem_type` is ONNX's
// TensorProto.DataType code (1 = float, 7 = int64, 16 = bfloat16, …), kept as declared.
struct ValueInfo {
  std::string name;
  int elem_type = 1;
  std::optional<std::vector<Dim>> shape;  // absent: rank unknown
};

// An ONNX attribute, parsed. Graph-valued attributes (If/Loop bodies) are not supported.
using AttributeValue = std::variant<std::int64_t, float, std::string, std::vector<std::int64_t>,
                                    std::vector<float>, std::vector<std::string>, Tensor>;

class Attributes {
 public:
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  void set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  void erase(const std::string& name) { values_.erase(name); }
  const std::map<std::string, AttributeValue>& all() const { return values_; }

  // Typed reads; throw refold::Error ("attribute 'pads' is a string, expected ints") when the
  // attribute has another type. The fallback is returned when the attribute is absent.
  std::int64_t get_int(const std::string& name, std::int64_t fallback) const;
  float get_float(const std::string& name, float fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<std::int64_t> get_ints(const std::string& name,
                                     const std::vector<std::int64_t>& fallback = {}) const;
  std::vector<float> get_floats(const std::string& name,
                                const std::vector<float>& fallback = {}) const;
  std::vector<std::string> get_strings(const std::string& name,
                                       const std::vector<std::string>& fallback = {}) const;
  Tensor get_tensor(const std::string& name) const;  // undefined when absent

 private:
  std::map<std::string, AttributeValue> values_;
};

struct Node {
  std::string name;  // unique and non-empty in a Graph (the importer names unnamed nodes)
  std::string op_type;
  std::string domain;  // "" = ai.onnx
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  Attributes attributes;
  nn::ModulePtr module;     // what runs; registered as the graph's child under `name`
  int source = -1;          // index of the unchanged ONNX NodeProto it came from, else -1
  std::vector<Node> parts;  // a fused node: the nodes it replaces, written back on export
  std::string origin;       // a node made by a pass: what it was made from (for the dump)
};

// Opaque to everything but src/onnx: the parsed file a graph came from, so that export can
// write untouched nodes, initializers and the header byte-identical.
struct SourceModel;

class ExecutionPlan;

class Graph : public nn::Module {
 public:
  Graph() : nn::Module("Graph") {}

  // The runtime interface, in order.
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  // Declared types of intermediate values (ONNX value_info), kept for export.
  std::vector<ValueInfo> value_info;
  std::shared_ptr<const SourceModel> source;  // null for a graph built in C++

  // ---- nodes, in execution order (topological; verify() checks) ----
  const std::vector<Node>& nodes() const { return nodes_; }
  Node& node(std::size_t index);
  // Inserts at `index` (nodes().size() appends) and registers node.module as a child under
  // node.name. Throws refold::Error when the name is empty or taken.
  Node& insert_node(std::size_t index, Node node);
  Node& add_node(Node node) { return insert_node(nodes_.size(), std::move(node)); }
  // Removes the node and unregisters its module.
  void erase_node(std::size_t index);
  // Swaps the module a node runs (e.g. a fused Conv2d), keeping it registered under the name.
  void set_module(std::size_t index, nn::ModulePtr module);
  std::optional<std::size_t> find_node(const std::string& name) const;

  // ---- constants (initializers), in insertion order ----
  bool is_constant(const std::string& value) const;
  const Tensor& constant(const std::string& value) const;  // throws when not a constant
  // Adds or replaces; `source_index` is the index of the unchanged ONNX initializer it came from.
  void set_constant(const std::string& value, Tensor tensor, int source_index = -1);
  void erase_constant(const std::string& value);
  std::vector<std::string> constant_names() const;
  int constant_source(const std::string& value) const;  // -1 when made or changed here

  // ---- who uses what ----
  // The index of the node writing `value`, or nullopt (graph input, constant, undefined).
  std::optional<std::size_t> producer(const std::string& value) const;
  // Indices of the nodes reading `value` (a node reading it twice is listed once), ascending.
  std::vector<std::size_t> consumers(const std::string& value) const;
  bool is_graph_output(const std::string& value) const;
  bool is_graph_input(const std::string& value) const;
  // A name no value or node uses yet: `base`, else `base_1`, `base_2`, … (deterministic).
  std::string unique_name(std::string_view base) const;

  // Checks the invariants and throws refold::Error naming the node and value: unique non-empty
  // node names, single assignment (no value written twice, no node writing an input or a
  // constant), every input defined before use (order is topological), every graph output
  // produced, every node has a module.
  void verify() const;
  // A readable listing: one line per node, "name: Op(inputs) -> outputs  [module, layout…]".
  std::string dump() const;

  // Called after each node with the values it read (constants included; "" → undefined) and
  // wrote: profiling, FLOP counting, tracing.
  using NodeObserver = std::function<void(const Node& node, const std::vector<Tensor>& inputs,
                                          const std::vector<Tensor>& outputs)>;
  // Runs the graph. `inputs` bind to `this->inputs` by position; returns `outputs` in order.
  // Throws refold::Error naming the input on a count/rank/static-dim mismatch. The first run
  // compiles the graph into an execution plan (every value name resolved once), which later runs
  // reuse until the graph changes: a non-const access to a node, a constant set or erased, to(),
  // or other names in `inputs` or `outputs`.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const NodeObserver& observe = {});
  // nn::Module: a graph with one input and one output.
  Tensor forward(const Tensor& input) override;
  // Runs the graph in the floating-point `dtype` (float32 or bfloat16): every floating module
  // parameter and buffer and every floating constant is converted, and every floating graph
  // input and output is declared `dtype`, so that run() takes and returns it. Returns *this.
  using nn::Module::to;
  nn::Module& to(DType dtype) override;

 private:
  // Where each node is, and who writes and reads each value: built by the first query after a
  // change, extended by an append, and dropped by every other non-const access to a node
  // (node(), insert_node() before the end, erase_node()), so a pass's queries cost a hash
  // lookup, not a scan of the graph. Not thread-safe: one thread at a time may query a graph.
  struct Index {
    std::unordered_map<std::string, std::size_t> node_of;                 // node name → index
    std::unordered_map<std::string, std::size_t> producer;                // value → writer
    std::unordered_map<std::string, std::vector<std::size_t>> consumers;  // value → readers
  };
  const Index& index() const;
  // Adds node `n`, at position `i` after every indexed node, to `ix`.
  static void index_node(Index& ix, const Node& n, std::size_t i);

  // Drops what was derived from the nodes and constants: the index and the compiled plan.
  void changed();

  std::vector<Node> nodes_;
  std::unordered_set<std::string> node_names_;  // a node's name is fixed once it is inserted
  mutable std::optional<Index> index_;
  // run()'s compiled plan and the interface it was compiled for (graph/plan.h); null after a
  // change.
  std::shared_ptr<const ExecutionPlan> plan_;
  std::vector<std::string> plan_inputs_, plan_outputs_;
  std::vector<std::string> constant_order_;
  std::map<std::string, std::pair<Tensor, int>> constants_;
};

}  // namespace refold::graph
