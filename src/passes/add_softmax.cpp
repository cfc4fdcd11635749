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
  const bool per_axis = build_opset(graph, softmax) >= 13;
  const std::int64_t axis = softmax.attributes.get_int("axis", per_axis ? -1 : 1);
  if (axis != -1) {
    const auto shape = shapes.shape(softmax.inputs[0]);
    if (!shape || axis != static_cast<std::int64_t>(shape->size()) - 1) return std::nullopt;
  }
  // Back from the softmax's input through reshapes to the Add.
  std::vector<std::size_t> reshapes;
  std::size_t reader = index;
  std::string value = softmax.inputs[0];
  std::optional<std::size_t> producer;
  for (;;) {
    producer = graph.producer(value);
    if (!producer || !single_use_problem(graph, value, reader).empty()) return std::nullopt;
    if (!is_reshape(graph.nodes()[*producer])) break;
    reshapes.insert(reshapes.begin(), *producer);
    reader = *producer;
    value = graph.nodes()[*producer].inputs[0];
  }
  const graph::Node& add = graph.nodes()[*producer];
  if (!is_op(add, "Add") || !add.parts.empty() || add.inputs.size() != 2 ||
      add.outputs.size() != 1 || add.inputs[0] == add.inputs[1] || add.inputs[0].empty() ||
      add.inputs[1].empty())
    return std::nullopt;
  const auto sum_shape = shapes.shape(value);
  if (!reshapes.empty()) {  // every value from the sum to the softmax's input: one last dim
    if (!sum_shape || sum_shape->empty()) return std::nullopt;
    for (const std::size_t r : reshapes) {
      const auto shape = shapes.shape(graph.nodes()[r].outputs[0]);
      if (!shape || shape->empty() || shape->back() != sum_shape->back()) return std::nullopt;
    }
  }
  AddSoftmaxMatch m{add.inputs[0], add.inputs[1], softmax.outputs[0], {*producer, index}, reshapes};
  // x: the operand of the sum's own shape (the kernel broadcasts c into it).
  const auto first = shapes.shape(m.x), second = shapes.shape(m.c);
  if (sum_shape && first && second && *first != *sum_shape && *second == *sum_shape)
    std::swap(m.x, m.c);
  return m;
}

std::string fuse_add_softmax(graph::Graph& graph, const AddSoftmaxMatch& m) {
  std::size_t add = m.parts[0], softmax = m.parts[1];
  const std::string note =
      fmt::format("rewrote {} of {} as one AddSoftmax of '{}' + '{}'{}",
                  describe(graph.nodes()[softmax]), describe(graph.nodes()[add]), m.x, m.c,
                  m.reshapes.empty() ? ""
                  : m.reshapes.size() == 1
                      ? ", the reshape between moved after it"
                      : fmt::format(", the {} reshapes between moved after it", m.reshapes.size()));
  // The reshapes leave their place (the Softmax moves up as they go) to follow the AddSoftmax,
  // which writes the Add's output name; the last reshape writes the softmax's output. The parts
  // are renamed to match: Add → a fresh name → Softmax → the Add's output name.
  std::vector<graph::Node> reshapes;
  for (auto it = m.reshapes.rbegin(); it != m.reshapes.rend(); ++it) {
    reshapes.insert(reshapes.begin(), graph.nodes()[*it]);
    graph.erase_node(*it);
    --softmax;
  }
  const std::string sum = graph.nodes()[add].outputs[0];
  if (!reshapes.empty()) {
    const std::string before = graph.unique_name(sum + "_before_softmax");
    graph.node(add).outputs[0] = before;
    graph.node(softmax).inputs[0] = before;
    graph.node(softmax).outputs[0] = sum;
    reshapes.back().outputs[0] = m.y;
  }
  graph::Node fused;
  fused.name = graph.nodes()[softmax].name;
  fused.op_type = "AddSoftmax";
  fused.domain = "refold";
  fused.inputs = {m.x, m.c};
  fused.outputs = {reshapes.empty() ? m.y : sum};
  fused.origin = origin_of(graph, {add, softmax});
  fused.attributes.set("axis", std::int64_t{-1});
  replace_with_fused(graph, {add, softmax}, std::move(fused));
  const std::size_t at = softmax - 1;  // where the fused node went: the Softmax's place
  for (std::size_t i = 0; i < reshapes.size(); ++i)
    graph.insert_node(at + 1 + i, std::move(reshapes[i]));
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
