// constant-folding: a node whose every input is a constant (or absent, "") is run once, here,
// and its outputs become constants; the node goes away. So is a node whose outputs depend only
// on its inputs' shapes (Shape, Size: ops::ShapeRule::InputShapesOnly) when those shapes are
// static — known from the graph inputs' declared shapes through the producers
// (detail::StaticShapes) — so the index arithmetic exporters write around a tensor of a fixed
// size (torch.onnx's slice assignment: Shape → Gather → Range → … → ScatterND indices) folds.
//
// Match: inputs all constants or "", or a shapes-only op over inputs of static shapes; a
//        graph::Op, or a plain module with at least one input; no output is a graph output
//        (the interface keeps its producers; an exporter need not write an initializer as a
//        graph output).
// Apply: run the node exactly as Graph::run would (an input goes contiguous first when the
//        module does not accept channels_last; a shapes-only op reads a stand-in of the input's
//        shape), then graph.set_constant(output, result) and erase the node.
// Declined, with a note: a result over the byte budget (docs/reliability.md G2,
// constant_folding.h) — for Expand and ConstantOfShape predicted from the constant shape before
// anything runs —, a node whose module throws (left for run time to report in context), a wrong
// output count.
//
// A constant whose last reader folds away is dropped at once, not left to dead-code: the index
// arithmetic before a ScatterND folds through a chain of large intermediates (Range → Expand →
// Concat → …), each of which would otherwise stay resident until then, and the load's peak would
// hold them all (MViTv2: 356 MB of int64 intermediates beside 105 MB of weights). For the same
// reason a view of an input constant keeps its storage when that input is dropped here.
//
// One forward sweep reaches the fixed point: nodes are in topological order, so when a node is
// visited every producer of its inputs has been visited and, if foldable, folded already.
//
// Then every node that reads a value folded here is built again from its data
// (ops::build_module), as the importer would have built it had those inputs been constants in
// the file: a Conv whose weight or bias came from a Constant node ran as the dynamic-weight
// graph op and now becomes an nn::Conv2d, which bn-folding, reparameterize, dead-taps and
// convert_conv2d_weight_memory_format reach. A node whose builder refuses keeps its module.
#include "passes/constant_folding.h"

#include "ops/op.h"
#include "passes/branch_nodes.h"
#include "passes/known_values.h"
#include "passes/node_module.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/check.h"
#include "passes/passes.h"
#include "refold/graph/op.h"

namespace refold::passes {
namespace {

using detail::describe;

bool all_inputs_constant(const graph::Graph& graph, const graph::Node& node) {
  return std::all_of(node.inputs.begin(), node.inputs.end(),
                     [&](const std::string& in) { return in.empty() || graph.is_constant(in); });
}

// Why the node cannot be folded before running it, or "" when it can.
std::string static_problem(const graph::Graph& graph, const graph::Node& node,
                           detail::StaticShapes& shapes) {
  if (!all_inputs_constant(graph, node) && !shapes.values_from_shapes(node)) {
    const ops::OpDef* def = ops::find_op(node);
    if (def && def->shape == ops::ShapeRule::InputShapesOnly)
      for (const std::string& in : node.inputs)
        if (!in.empty() && !shapes.shape(in))
          return fmt::format("the shape of '{}' is not static", in);
    return "not constant";  // the common case
  }
  const bool is_op = dynamic_cast<const graph::Op*>(node.module.get()) != nullptr;
  if (!is_op && node.inputs.empty()) return "has no input to run its module on";
  if (node.outputs.empty()) return "has no output";
  for (const std::string& out : node.outputs) {
    if (graph.is_graph_output(out)) return fmt::format("writes graph output '{}'", out);
  }
  return "";
}

// The node run as Graph::run runs it (graph.h, "How a node runs"), on its constant inputs or,
// for a shapes-only op, stand-ins of its inputs' static shapes.
std::vector<Tensor> run_node(const graph::Graph& graph, const graph::Node& node,
                             detail::StaticShapes& shapes) {
  if (all_inputs_constant(graph, node))
    return detail::run_node(node, [&](const std::string& in) { return graph.constant(in); });
  auto results = shapes.run_stand_ins(node);
  REFOLD_CHECK(results.has_value(), "its inputs' static shapes could not be read");
  return std::move(*results);
}

// What a size-making op would allocate, known from its constant inputs before it runs, so
// that an Expand or ConstantOfShape to [2^40] is declined without allocating
// (docs/reliability.md G2, "validate before allocating"). In double: only compared with the
// budget, never allocated.
// nullopt when not such an op or not known (the op then runs and reports its own errors).
std::optional<double> predicted_bytes(const graph::Graph& graph, const graph::Node& node) {
  const bool expand = node.op_type == "Expand" && node.inputs.size() == 2;
  const bool fill = node.op_type == "ConstantOfShape" && node.inputs.size() == 1;
  if (!expand && !fill) return std::nullopt;
  const std::string& shape_name = node.inputs.back();
  if (shape_name.empty() || !graph.is_constant(shape_name)) return std::nullopt;
  const Tensor& shape = graph.constant(shape_name);
  if (shape.dim() != 1) return std::nullopt;
  std::vector<double> sizes;
  for (float v : shape.to_vector()) {
    if (v < 0) return std::nullopt;
    sizes.push_back(v);
  }
  double element = 4;  // ConstantOfShape's default value is float32
  if (expand) {
    const Tensor& input = graph.constant(node.inputs[0]);
    element = static_cast<double>(input.element_size());
    // NumPy broadcasting, aligned at the last dimension: the larger size of each pair.
    const Shape& in = input.sizes();
    if (in.size() > sizes.size()) sizes.insert(sizes.begin(), in.size() - sizes.size(), 1.0);
    for (std::size_t k = 0; k < in.size(); ++k) {
      double& s = sizes[sizes.size() - in.size() + k];
      s = std::max(s, static_cast<double>(in[k]));
    }
  } else if (const Tensor value = node.attributes.get_tensor("value"); value.defined()) {
    element = static_cast<double>(value.element_size());
  }
  double bytes = element;
  for (double s : sizes) bytes *= s;
  return bytes;
}

std::size_t byte_size(const Tensor& t) {
  // numel() is overflow-checked where the tensor was made, and the storage exists, so the
  // product fits: it is at most the bytes actually allocated.
  return static_cast<std::size_t>(t.numel()) * t.element_size();
}

// The nodes reading a value that became a constant, rebuilt from their data (see the top).
void rebuild_readers(graph::Graph& graph, const std::set<std::string>& folded, PassReport& report) {
  if (folded.empty()) return;
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    const graph::Node& node = graph.nodes()[i];
    if (!node.parts.empty() || !ops::find_op(node)) continue;
    if (std::none_of(node.inputs.begin(), node.inputs.end(),
                     [&](const std::string& in) { return folded.count(in) != 0; }))
      continue;
    nn::ModulePtr module;
    try {
      module = module_for(graph, node);
    } catch (const std::exception&) {
      continue;  // as it was: the run reports any problem, in context
    }
    if (module->type_name() != node.module->type_name())
      report.notes.push_back(fmt::format("rebuilt {} over its now constant inputs: runs {}",
                                         describe(node), module->type_name()));
    graph.set_module(i, module);
  }
}

// How many times each value is read: by node inputs and, for a fused node, by its parts (the
// exporter writes the parts, so what they read stays) — dead-code's notion of a read.
void count_reads(const graph::Node& node, std::unordered_map<std::string, int>& reads) {
  for (const std::string& in : node.inputs)
    if (!in.empty()) ++reads[in];
  for (const graph::Node& part : node.parts) count_reads(part, reads);
}

}  // namespace

PassReport fold_constants(graph::Graph& graph, std::size_t max_bytes) {
  PassReport report;
  report.pass = "constant-folding";
  std::size_t folded = 0;
  std::set<std::string> folded_values;
  detail::StaticShapes shapes(graph);  // valid throughout: folding keeps every value's shape
  std::unordered_map<std::string, int> reads;
  for (const graph::Node& node : graph.nodes()) count_reads(node, reads);
  // The node's constant inputs that nothing else reads (it is their last reader) and that are not
  // part of the graph's interface: dropped with the node.
  auto last_read_here = [&](const graph::Node& node) {
    std::unordered_map<std::string, int> here;
    for (const std::string& in : node.inputs)
      if (!in.empty()) ++here[in];
    std::set<std::string> last;
    for (const auto& [value, count] : here)
      if (graph.is_constant(value) && reads[value] == count && !graph.is_graph_output(value) &&
          !graph.is_graph_input(value))
        last.insert(value);
    return last;
  };
  for (std::size_t i = 0; i < graph.nodes().size();) {
    const graph::Node& node = graph.nodes()[i];
    const std::string problem = static_problem(graph, node, shapes);
    if (!problem.empty()) {
      if (problem != "not constant") {
        report.notes.push_back(fmt::format("kept {}: {}", describe(node), problem));
      }
      ++i;
      continue;
    }
    if (const auto bytes = predicted_bytes(graph, node);
        bytes && *bytes > static_cast<double>(max_bytes)) {
      report.notes.push_back(fmt::format(
          "kept {}: its output would be {:.0f} bytes, over the folding budget of {} bytes",
          describe(node), *bytes, max_bytes));
      ++i;
      continue;
    }
    std::vector<Tensor> results;
    try {
      results = run_node(graph, node, shapes);
    } catch (const std::exception& e) {
      report.notes.push_back(
          fmt::format("kept {}: running it failed: {}", describe(node), e.what()));
      ++i;
      continue;
    }
    std::string declined;
    if (results.size() < node.outputs.size()) {
      declined = fmt::format("gave {} outputs, expected {}", results.size(), node.outputs.size());
    }
    for (std::size_t k = 0; declined.empty() && k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;
      if (!results[k].defined()) {
        declined = fmt::format("output '{}' is undefined", node.outputs[k]);
      } else if (byte_size(results[k]) > max_bytes) {
        declined = fmt::format("output '{}' ({}) is {} bytes, over the folding budget of {} bytes",
                               node.outputs[k], results[k].description(), byte_size(results[k]),
                               max_bytes);
      }
    }
    if (!declined.empty()) {
      report.notes.push_back(fmt::format("kept {}: {}", describe(node), declined));
      ++i;
      continue;
    }
    const std::set<std::string> dropped = last_read_here(node);
    std::vector<std::string> made;
    for (std::size_t k = 0; k < node.outputs.size(); ++k) {
      if (node.outputs[k].empty()) continue;
      Tensor value = results[k];
      // A view of an input constant (Reshape, Squeeze, …) gets its own storage, so a later pass
      // that rewrites one constant in place cannot change the other — unless the input goes
      // with this node and the view is all of it, contiguous (a reshape): then it simply owns it.
      for (const std::string& in : node.inputs) {
        if (in.empty() || !graph.is_constant(in) || !value.shares_storage(graph.constant(in)))
          continue;
        const bool whole = value.is_contiguous() && value.numel() == graph.constant(in).numel();
        if (dropped.count(in) == 0 || !whole) value = value.clone();
        break;
      }
      graph.set_constant(node.outputs[k], std::move(value));
      made.push_back(node.outputs[k]);
    }
    report.notes.push_back(fmt::format("folded {} into constant{} {}", describe(node),
                                       made.size() == 1 ? "" : "s", fmt::join(made, ", ")));
    for (const std::string& in : node.inputs)
      if (!in.empty()) --reads[in];
    graph.erase_node(i);
    for (const std::string& value : dropped) graph.erase_constant(value);
    ++folded;
    folded_values.insert(made.begin(), made.end());
  }
  report.changed = folded > 0;
  rebuild_readers(graph, folded_values, report);
  return report;
}

PassReport fold_constants(graph::Graph& graph) { return fold_constants(graph, kMaxFoldedBytes); }

}  // namespace refold::passes
