// A softmax of a sum (add_softmax.h).
#include "passes/add_softmax.h"

#include <fmt/format.h>

#include "core/check.h"
#include "ops/softmax.h"
#include "passes/branch_nodes.h"
#include "passes/node_module.h"

namespace refold::passes::detail {

std::optional<AddSoftmaxMatch> match_add_softmax(const graph::Graph& graph, std::size_t index,
                                                 StaticShapes& shapes) {
  const graph::Node& softmax = graph.nodes()[index];
  if (!is_op(softmax, "Softmax") || !softmax.parts.empty() || softmax.inputs.size() != 1 ||
      softmax.outputs.size() != 1)
    return std::nullopt;
  const std::string& sum = softmax.inputs[0];
  const bool per_axis = build_opset(graph, softmax) >= 13;
  const std::int64_t axis = softmax.attributes.get_int("axis", per_axis ? -1 : 1);
  if (axis != -1) {
    const auto shape = shapes.shape(sum);
    if (!shape || axis != static_cast<std::int64_t>(shape->size()) - 1) return std::nullopt;
  }
  const auto producer = graph.producer(sum);
  if (!producer || !single_use_problem(graph, sum, index).empty()) return std::nullopt;
  const graph::Node& add = graph.nodes()[*producer];
  if (!is_op(add, "Add") || !add.parts.empty() || add.inputs.size() != 2 ||
      add.outputs.size() != 1 || add.inputs[0] == add.inputs[1] || add.inputs[0].empty() ||
      add.inputs[1].empty())
    return std::nullopt;
  AddSoftmaxMatch m{add.inputs[0], add.inputs[1], softmax.outputs[0], {*producer, index}};
  // x: the operand of the sum's own shape (the kernel broadcasts c into it).
  const auto y_shape = shapes.shape(sum);
  const auto first = shapes.shape(m.x), second = shapes.shape(m.c);
  if (y_shape && first && second && *first != *y_shape && *second == *y_shape) std::swap(m.x, m.c);
  return m;
}

std::string fuse_add_softmax(graph::Graph& graph, const AddSoftmaxMatch& m) {
  const graph::Node& softmax = graph.nodes()[m.parts[1]];
  graph::Node fused;
  fused.name = softmax.name;
  fused.op_type = "AddSoftmax";
  fused.domain = "refold";
  fused.inputs = {m.x, m.c};
  fused.outputs = {m.y};
  fused.origin = origin_of(graph, m.parts);
  fused.attributes.set("axis", std::int64_t{-1});
  const std::string note =
      fmt::format("rewrote {} of {} as one AddSoftmax of '{}' + '{}'", describe(softmax),
                  describe(graph.nodes()[m.parts[0]]), m.x, m.c);
  replace_with_fused(graph, m.parts, std::move(fused));
  return note;
}

nn::ModulePtr build_add_softmax(const graph::Node& node) {
  REFOLD_CHECK(node.inputs.size() == 2 && node.outputs.size() == 1,
               "AddSoftmax '{}': expects 2 inputs and 1 output; got {} and {}", node.name,
               node.inputs.size(), node.outputs.size());
  const std::int64_t axis = node.attributes.get_int("axis", 0);
  REFOLD_CHECK(axis == -1, "AddSoftmax '{}': axis {} is not -1 (the last axis)", node.name, axis);
  return std::make_shared<ops::Softmax>("Softmax", reference::SoftmaxKind::Softmax, -1, false);
}

}  // namespace refold::passes::detail
