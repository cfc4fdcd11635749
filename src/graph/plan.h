// graph::ExecutionPlan — a Graph compiled for running: every value name resolved to a slot once,
// each node's module (and whether it is a graph::Op) looked up once, and the point after which
// each activation is dropped computed once. Graph::run compiles one per call; refold::Session
// keeps one and runs it from any number of threads at once.
//
// run() is const and keeps all per-run state (the slots) on its own stack, so concurrent runs
// share only the graph's constants and modules, which running does not change. The graph must
// not change while a plan made from it exists.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/graph/graph.h"
#include "refold/graph/op.h"

namespace refold::graph {

// The name a node's module is registered under: module children may not contain '.', ONNX node
// names often do ("/stage1/rbr_dense/Conv" keeps its slashes, "layer1.0" becomes "layer1_0").
std::string module_child_name(const std::string& node_name);

// `e`, thrown while `node` ran, as the executor reports it: "Softmax 'sm': …" for a graph::Op;
// for an nn module, which named itself ("MaxPool2d 'MaxPool_0': …"), the node and its op type
// instead ("MaxPool 'MaxPool_0' (MaxPool2d): …"), keeping any deeper module path.
Error error_in_node(const Node& node, const Error& e);

class ExecutionPlan {
 public:
  explicit ExecutionPlan(const Graph& graph);

  // Plans made so far in this process (Graph::run compiles one only when its graph changed).
  static std::uint64_t compiled_count();

  // As Graph::run: `inputs` bind to the graph's inputs by position (checked against their
  // declared element type and static dims); returns the graph's outputs in order.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const Graph::NodeObserver& observe = {}) const;

 private:
  static constexpr int kAbsent = -1;  // an optional input left out ("")
  struct Step {
    const Node* node;
    Op* op;                           // null: a single-input nn::Module
    std::vector<int> inputs;          // slots (kAbsent for "")
    std::vector<int> outputs;         // slots (kAbsent for "")
    std::vector<int> last_read_here;  // slots dropped once this step has run
    // By input: the slot is given up to an Op here (moved into its arguments, see
    // Op::run_consuming): its last read, not a graph input, output or constant.
    std::vector<bool> handed_over;
    // Every reader of every output reads views and none is a graph output: Op::run_views.
    bool views_out = false;
  };

  const Graph& graph_;
  std::vector<Tensor> constants_;  // by slot: the constant's tensor, undefined for other slots
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<std::string> slot_names_;
  std::vector<Step> steps_;
};

}  // namespace refold::graph
