// Reshape → InstanceNormalization → Reshape as one GroupNormalization (group_norm_pattern.h has
// the pattern and why it is exact).
#include "passes/group_norm_pattern.h"

#include <fmt/format.h>

#include <functional>
#include <numeric>

#include "ops/op.h"
#include "passes/branch_nodes.h"
#include "passes/node_module.h"

namespace refold::passes::detail {
namespace {

// A plain (unfused) node of `op_type` with one output.
bool plain(const graph::Node& node, const char* op_type) {
  return is_op(node, op_type) && node.parts.empty() && node.outputs.size() == 1;
}

// A 1-d floating constant of length n.
bool per_group_constant(const graph::Graph& graph, const std::string& name, std::int64_t n) {
  if (name.empty() || !graph.is_constant(name)) return false;
  const Tensor& t = graph.constant(name);
  return is_floating(t.dtype()) && t.dim() == 1 && t.size(0) == n;
}

}  // namespace

std::optional<GroupNormMatch> match_group_norm(const graph::Graph& graph, std::size_t index,
                                               StaticShapes& shapes) {
  const graph::Node& norm = graph.nodes()[index];
  if (!plain(norm, "InstanceNormalization") || norm.inputs.size() != 3) return std::nullopt;
  const auto around = between_reshapes(graph, index);
  if (!around) return std::nullopt;
  const std::string& r = norm.inputs[0];
  GroupNormMatch m;
  m.x = around->x;
  m.y = around->y;
  // The shapes: x [N, C, d…], r [N, G, (C/G)·∏d], y the shape of x.
  const auto xs = shapes.shape(m.x), rs = shapes.shape(r), ys = shapes.shape(m.y);
  const auto dtype = shapes.dtype(m.x);
  if (!xs || !rs || !ys || !dtype || !is_floating(*dtype) || xs->size() < 2 || rs->size() != 3 ||
      *ys != *xs)
    return std::nullopt;
  const std::int64_t channels = (*xs)[1], groups = (*rs)[1];
  const std::int64_t per_sample =
      std::accumulate(xs->begin() + 1, xs->end(), std::int64_t{1}, std::multiplies<std::int64_t>());
  if ((*rs)[0] != (*xs)[0] || groups <= 0 || channels % groups != 0 ||
      groups * (*rs)[2] != per_sample)
    return std::nullopt;
  m.groups = groups;
  m.channels = channels;
  m.scale = norm.inputs[1];
  m.bias = norm.inputs[2];
  if (!per_group_constant(graph, m.scale, groups) || !per_group_constant(graph, m.bias, groups))
    return std::nullopt;
  m.epsilon = norm.attributes.get_float("epsilon", 1e-5f);
  m.parts = {around->first, index, around->last};
  return m;
}

std::string fuse_group_norm(graph::Graph& graph, const GroupNormMatch& m) {
  const graph::Node& norm = graph.nodes()[m.parts[1]];
  graph::Node fused;
  fused.name = norm.name;
  fused.op_type = "GroupNormalization";
  fused.inputs = {m.x, m.scale, m.bias};
  fused.outputs = {m.y};
  fused.attributes.set("num_groups", m.groups);
  fused.attributes.set("epsilon", m.epsilon);
  fused.origin = "Reshape+InstanceNormalization+Reshape";
  // GroupNormalization's scale and bias are per group at opsets 18–20, as InstanceNormalization
  // had them, and per channel from 21: the node gets them for the version it is built at.
  if (build_opset(graph, fused) >= 21) {
    const std::int64_t channels = m.channels, per_group = m.channels / m.groups;
    for (std::size_t k = 1; k <= 2; ++k) {
      const Tensor g = graph.constant(fused.inputs[k]).contiguous();  // [G]
      const std::string name = graph.unique_name(fused.inputs[k] + "_per_channel");
      // c ↦ g[c / (C/G)]: each group's value repeated over its channels.
      graph.set_constant(name, g.as_strided({m.groups, per_group}, {1, 0}, g.storage_offset())
                                   .contiguous()
                                   .reshape({channels}));
      fused.inputs[k] = name;
    }
  }
  const std::string note =
      fmt::format("rewrote {} between Reshapes as GroupNormalization ({} {})", describe(norm),
                  m.groups, m.groups == 1 ? "group" : "groups");
  replace_with_fused(graph, m.parts, std::move(fused));
  return note;
}

}  // namespace refold::passes::detail
