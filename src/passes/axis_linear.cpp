// A Linear along a non-last axis as one node (axis_linear.h).
#include "passes/axis_linear.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/check.h"
#include "ops/axis_linear.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {
namespace {

// Whether `value` is a float constant of `n` values along the last axis of a rank-`rank` sum.
bool row_bias(const graph::Graph& graph, const std::string& value, std::int64_t n,
              std::size_t rank) {
  if (!graph.is_constant(value)) return false;
  const Tensor& b = graph.constant(value);
  if (!is_floating(b.dtype()) || b.dim() < 1 || static_cast<std::size_t>(b.dim()) > rank ||
      b.size(-1) != n)
    return false;
  for (std::int64_t d = 0; d + 1 < b.dim(); ++d)
    if (b.size(d) != 1) return false;
  return true;
}

}  // namespace

std::optional<AxisLinearMatch> match_axis_linear(const graph::Graph& graph, std::size_t index) {
  const graph::Node& mm = graph.nodes()[index];
  if (!is_op(mm, "MatMul") || !mm.parts.empty() || mm.inputs.size() != 2 ||
      mm.outputs.size() != 1 || !graph.is_constant(mm.inputs[1]))
    return std::nullopt;
  const Tensor& w = graph.constant(mm.inputs[1]);
  if (w.dim() != 2 || !is_floating(w.dtype())) return std::nullopt;
  // t = Transpose(x, p), read by the MatMul alone.
  const auto first = graph.producer(mm.inputs[0]);
  if (!first || !single_use_problem(graph, mm.inputs[0], index).empty()) return std::nullopt;
  const graph::Node& t = graph.nodes()[*first];
  if (!is_op(t, "Transpose") || !t.parts.empty() || t.inputs.size() != 1) return std::nullopt;
  const std::vector<std::int64_t> p = t.attributes.get_ints("perm");
  const auto rank = static_cast<std::int64_t>(p.size());
  if (rank < 2 || p.back() == rank - 1) return std::nullopt;  // the last axis: a plain Linear
  std::vector<bool> seen(p.size());
  for (std::int64_t a : p) {
    if (a < 0 || a >= rank || seen[static_cast<std::size_t>(a)]) return std::nullopt;
    seen[static_cast<std::size_t>(a)] = true;
  }
  AxisLinearMatch m;
  m.x = t.inputs[0];
  m.w = mm.inputs[1];
  m.axis = p.back();
  m.parts = {*first, index};
  std::string product = mm.outputs[0];
  // An optional Add of the bias, either operand order.
  if (const auto add = sole_plain_reader(graph, product, "Add")) {
    const graph::Node& a = graph.nodes()[*add];
    const std::string& other = a.inputs.size() == 2 ? a.inputs[a.inputs[0] == product ? 1 : 0] : "";
    if (a.inputs.size() == 2 && a.inputs[0] != a.inputs[1] &&
        row_bias(graph, other, w.size(1), p.size())) {
      m.b = other;
      m.parts.push_back(*add);
      product = a.outputs[0];
    }
  }
  // y = Transpose(·, p⁻¹).
  const auto back = sole_plain_reader(graph, product, "Transpose");
  if (!back) return std::nullopt;
  const std::vector<std::int64_t> q = graph.nodes()[*back].attributes.get_ints("perm");
  if (q.size() != p.size()) return std::nullopt;
  for (std::size_t d = 0; d < q.size(); ++d)
    if (q[d] < 0 || q[d] >= rank ||
        p[static_cast<std::size_t>(q[d])] != static_cast<std::int64_t>(d))
      return std::nullopt;
  m.parts.push_back(*back);
  m.y = graph.nodes()[*back].outputs[0];
  return m;
}

std::string fuse_axis_linear(graph::Graph& graph, const AxisLinearMatch& m) {
  const std::size_t last = *std::max_element(m.parts.begin(), m.parts.end());
  graph::Node fused;
  fused.name = graph.nodes()[last].name;
  fused.op_type = "AxisLinear";
  fused.domain = "refold";
  fused.inputs = {m.x, m.w};
  if (!m.b.empty()) fused.inputs.push_back(m.b);
  fused.outputs = {m.y};
  fused.origin = origin_of(graph, m.parts);
  fused.attributes.set("axis", m.axis);
  const std::string note =
      fmt::format("rewrote {} ({}) as AxisLinear along axis {} of '{}'",
                  describe(graph.nodes()[m.parts[1]]), fused.origin, m.axis, m.x);
  replace_with_fused(graph, m.parts, std::move(fused));
  return note;
}

nn::ModulePtr build_axis_linear(const graph::Node& node) {
  REFOLD_CHECK((node.inputs.size() == 2 || node.inputs.size() == 3) && node.outputs.size() == 1,
               "AxisLinear '{}': expects 2 or 3 inputs and 1 output; got {} and {}", node.name,
               node.inputs.size(), node.outputs.size());
  const std::int64_t axis = node.attributes.get_int("axis", -1);
  REFOLD_CHECK(axis >= 0, "AxisLinear '{}': axis {} is negative", node.name, axis);
  return std::make_shared<ops::AxisLinear>(axis);
}

}  // namespace refold::passes::detail
