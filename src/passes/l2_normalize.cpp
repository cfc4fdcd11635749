// F.normalize as one node (l2_normalize.h).
#include "passes/l2_normalize.h"

#include <fmt/format.h>

#include <cmath>

#include "core/check.h"
#include "ops/l2_normalize.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {
namespace {

// The producer of `value` when the node `reader` alone reads it (and it is no graph output).
std::optional<std::size_t> sole_producer(const graph::Graph& graph, const std::string& value,
                                         std::size_t reader) {
  const auto producer = graph.producer(value);
  if (!producer || !single_use_problem(graph, value, reader).empty()) return std::nullopt;
  const graph::Node& n = graph.nodes()[*producer];
  if (!n.parts.empty() || n.outputs.size() != 1) return std::nullopt;
  return producer;
}

// A constant finite float scalar's value.
std::optional<float> finite_scalar(const graph::Graph& graph, const std::string& name) {
  const auto t = constant_value(graph, name);
  if (!t || t->numel() != 1 || t->dtype() != DType::Float32) return std::nullopt;
  const float v = t->item();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace

std::optional<L2NormalizeMatch> match_l2_normalize(const graph::Graph& graph, std::size_t index) {
  const graph::Node& div = graph.nodes()[index];
  if (!is_op(div, "Div") || !div.parts.empty() || div.inputs.size() != 2 ||
      div.outputs.size() != 1 || div.inputs[0].empty() || div.inputs[0] == div.inputs[1])
    return std::nullopt;
  L2NormalizeMatch m;
  m.x = div.inputs[0];
  m.y = div.outputs[0];
  auto producer = sole_producer(graph, div.inputs[1], index);
  if (!producer) return std::nullopt;
  m.parts = {*producer, index};
  // The bound, if any: Clip(n, ε) with no upper bound, or Max(n, ε) either way round.
  const graph::Node& bound = graph.nodes()[*producer];
  std::string norm = div.inputs[1];
  if (is_op(bound, "Clip")) {
    if (bound.inputs.size() < 2 || (bound.inputs.size() > 2 && !bound.inputs[2].empty()))
      return std::nullopt;
    const auto epsilon = finite_scalar(graph, bound.inputs[1]);
    if (!epsilon) return std::nullopt;
    m.epsilon = *epsilon;
    norm = bound.inputs[0];
  } else if (is_op(bound, "Max") && bound.inputs.size() == 2) {
    const bool first = finite_scalar(graph, bound.inputs[1]).has_value();
    const auto epsilon = finite_scalar(graph, bound.inputs[first ? 1 : 0]);
    if (!epsilon) return std::nullopt;
    m.epsilon = *epsilon;
    norm = bound.inputs[first ? 0 : 1];
  }
  if (norm != div.inputs[1]) {
    producer = sole_producer(graph, norm, *producer);
    if (!producer) return std::nullopt;
    m.parts.insert(m.parts.begin(), *producer);
  }
  const graph::Node& reduce = graph.nodes()[*producer];
  if (!is_op(reduce, "ReduceL2") || reduce.inputs.empty() || reduce.inputs[0] != m.x ||
      reduce.attributes.get_int("keepdims", 1) != 1)
    return std::nullopt;
  const auto axes = reduce_axes(graph, reduce);
  if (!axes || axes->size() != 1) return std::nullopt;
  m.axis = axes->front();
  return m;
}

std::string fuse_l2_normalize(graph::Graph& graph, const L2NormalizeMatch& m) {
  const graph::Node& div = graph.nodes()[m.parts.back()];
  graph::Node fused;
  fused.name = div.name;
  fused.op_type = "L2Normalize";
  fused.domain = "refold";
  fused.inputs = {m.x};
  fused.outputs = {m.y};
  fused.origin = origin_of(graph, m.parts);
  fused.attributes.set("axis", m.axis);
  fused.attributes.set("epsilon", m.epsilon);
  const std::string note = fmt::format("rewrote {} ({}) as one L2Normalize of '{}' along axis {}",
                                       describe(div), fused.origin, m.x, m.axis);
  replace_with_fused(graph, m.parts, std::move(fused));
  return note;
}

nn::ModulePtr build_l2_normalize(const graph::Node& node) {
  REFOLD_CHECK(node.inputs.size() == 1 && node.outputs.size() == 1,
               "L2Normalize '{}': expects 1 input and 1 output; got {} and {}", node.name,
               node.inputs.size(), node.outputs.size());
  REFOLD_CHECK(node.attributes.has("axis"), "L2Normalize '{}': has no axis", node.name);
  const float epsilon = node.attributes.get_float("epsilon", 0.0f);
  REFOLD_CHECK(std::isfinite(epsilon), "L2Normalize '{}': epsilon {} is not finite", node.name,
               epsilon);
  return std::make_shared<ops::L2Normalize>(node.attributes.get_int("axis", 0), epsilon);
}

}  // namespace refold::passes::detail
