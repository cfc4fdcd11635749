// Split attention's group sums as one node (group_sum.h).
#include "passes/group_sum.h"

#include <fmt/format.h>

#include <vector>

#include "core/check.h"
#include "ops/group_sum.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {
namespace {

// The number of groups when `reshape` is a plain Reshape of a 4-d [N, r·C, H, W] into
// [N, r, C, H, W], else nullopt.
std::optional<std::int64_t> channel_split(const graph::Node& reshape, StaticShapes& shapes) {
  if (!is_op(reshape, "Reshape") || !reshape.parts.empty() || reshape.outputs.size() != 1)
    return std::nullopt;
  const auto in = shapes.shape(reshape.inputs[0]);
  const auto out = shapes.shape(reshape.outputs[0]);
  if (!in || !out || in->size() != 4 || out->size() != 5) return std::nullopt;
  const Shape& x = *in;
  const Shape& s = *out;
  if (s[0] != x[0] || s[1] < 1 || s[1] * s[2] != x[1] || s[3] != x[2] || s[4] != x[3])
    return std::nullopt;
  return s[1];
}

// Whether `shape` holds r·C values per n in (k, c) order, broadcast over H and W: [N|1, r, C,
// 1, 1] or [r, C, 1, 1].
bool group_weights(const Shape& shape, std::int64_t n, std::int64_t groups, std::int64_t c) {
  if (shape.size() == 5 && (shape[0] == 1 || shape[0] == n))
    return shape[1] == groups && shape[2] == c && shape[3] == 1 && shape[4] == 1;
  return shape.size() == 4 && shape[0] == groups && shape[1] == c && shape[2] == 1 && shape[3] == 1;
}

}  // namespace

std::optional<GroupSumMatch> match_group_sum(const graph::Graph& graph, std::size_t index,
                                             StaticShapes& shapes) {
  const graph::Node& reduce = graph.nodes()[index];
  if (!is_op(reduce, "ReduceSum") || !reduce.parts.empty() || reduce.inputs.empty() ||
      reduce.outputs.size() != 1 || reduce.attributes.get_int("keepdims", 1) != 0)
    return std::nullopt;
  const auto axes = reduce_axes(graph, reduce);
  if (!axes || axes->size() != 1 || (axes->front() != 1 && axes->front() != -4))
    return std::nullopt;
  const auto producer = graph.producer(reduce.inputs[0]);
  if (!producer) return std::nullopt;
  GroupSumMatch m;
  m.y = reduce.outputs[0];
  m.reduce = index;
  const graph::Node& p = graph.nodes()[*producer];
  if (is_op(p, "Mul")) {
    if (!p.parts.empty() || p.inputs.size() != 2 || p.outputs.size() != 1 ||
        p.inputs[0] == p.inputs[1] || !single_use_problem(graph, p.outputs[0], index).empty())
      return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const auto r = graph.producer(p.inputs[side]);
      if (!r) continue;
      const auto groups = channel_split(graph.nodes()[*r], shapes);
      const auto x = shapes.shape(graph.nodes()[*r].inputs[0]);
      const auto a = shapes.shape(p.inputs[1 - side]);
      if (!groups || !a || !group_weights(*a, (*x)[0], *groups, (*x)[1] / *groups)) continue;
      m.x = graph.nodes()[*r].inputs[0];
      m.a = p.inputs[1 - side];
      m.groups = *groups;
      m.reshape = *r;
      m.mul = *producer;
      return m;
    }
    return std::nullopt;
  }
  const auto groups = channel_split(p, shapes);
  if (!groups) return std::nullopt;
  m.x = p.inputs[0];
  m.groups = *groups;
  m.reshape = *producer;
  return m;
}

std::string fuse_group_sum(graph::Graph& graph, const GroupSumMatch& m) {
  const std::string note =
      fmt::format("rewrote {} of the {} channel groups of '{}'{} as one GroupSum",
                  describe(graph.nodes()[m.reduce]), m.groups, m.x,
                  m.a.empty() ? "" : fmt::format(", weighted by '{}',", m.a));
  // The fused node's own copy of the Reshape, just before the first part that reads it (the Mul,
  // else the ReduceSum): the original may feed other nodes. Its names follow the ReduceSum's,
  // made unique in the graph (a file refold wrote has them already), so two fused nodes' copies
  // of one Reshape never share a name either.
  graph::Node split = graph.nodes()[m.reshape];
  const std::string reshaped = split.outputs[0];
  const std::string copy = graph.unique_name(m.y + "_split");
  split.name = graph.unique_name(graph.nodes()[m.reduce].name + "/split");
  split.outputs = {copy};
  const std::size_t at = m.mul.value_or(m.reduce);
  graph.insert_node(at, std::move(split));
  for (std::string& input : graph.node(at + 1).inputs)
    if (input == reshaped) input = copy;
  std::vector<std::size_t> parts = {at, at + 1};  // the copy, its reader
  if (m.mul) parts.push_back(m.reduce + 1);       // the Mul comes before its ReduceSum
  graph::Node fused;
  fused.name = graph.nodes()[parts.back()].name;
  fused.op_type = "GroupSum";
  fused.domain = "refold";
  fused.inputs = {m.x};
  if (!m.a.empty()) fused.inputs.push_back(m.a);
  fused.outputs = {m.y};
  fused.origin = origin_of(graph, parts);
  fused.attributes.set("groups", m.groups);
  replace_with_fused(graph, parts, std::move(fused));
  return note;
}

nn::ModulePtr build_group_sum(const graph::Node& node) {
  REFOLD_CHECK((node.inputs.size() == 1 || node.inputs.size() == 2) && node.outputs.size() == 1,
               "GroupSum '{}': expects 1 or 2 inputs and 1 output; got {} and {}", node.name,
               node.inputs.size(), node.outputs.size());
  const std::int64_t groups = node.attributes.get_int("groups", 0);
  REFOLD_CHECK(groups >= 1, "GroupSum '{}': groups {} is not positive", node.name, groups);
  return std::make_shared<ops::GroupSum>(groups);
}

}  // namespace refold::passes::detail
