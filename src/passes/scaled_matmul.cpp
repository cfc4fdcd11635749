// The scaled matrix product (scaled_matmul.h).
#include "passes/scaled_matmul.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>

#include "core/check.h"
#include "ops/gemm.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {
namespace {

// The factor a plain node applies to `value` when it is Mul(value, c), Mul(c, value) or
// Div(value, c) with c a finite, non-zero one-element float constant; nullopt otherwise.
std::optional<double> scalar_factor(const graph::Graph& graph, const graph::Node& n,
                                    const std::string& value) {
  if (!n.parts.empty() || n.inputs.size() != 2 || n.outputs.size() != 1 ||
      n.inputs[0] == n.inputs[1])
    return std::nullopt;
  const bool mul = is_op(n, "Mul"), div = is_op(n, "Div");
  if (!mul && !div) return std::nullopt;
  const bool first = n.inputs[0] == value;
  if (!first && (div || n.inputs[1] != value)) return std::nullopt;
  const auto c = constant_value(graph, n.inputs[first ? 1 : 0]);
  if (!c || c->numel() != 1 || c->dtype() != DType::Float32) return std::nullopt;
  const double v = c->item();
  if (!std::isfinite(v) || v == 0.0) return std::nullopt;
  return div ? 1.0 / v : v;
}

// The perm of a plain Transpose of a rank-`rank` value, when it is not the identity and keeps
// the product's N or M dim innermost (an order the product can be written in); nullopt otherwise.
std::optional<std::vector<std::int64_t>> product_order(const graph::Node& n) {
  if (!is_op(n, "Transpose") || !n.parts.empty() || n.inputs.size() != 1 || n.outputs.size() != 1 ||
      !n.attributes.has("perm"))
    return std::nullopt;
  std::vector<std::int64_t> perm = n.attributes.get_ints("perm", {});
  const auto rank = static_cast<std::int64_t>(perm.size());
  if (rank < 3) return std::nullopt;  // 2-d products: the batched matmul is oneDNN's from 3 dims
  std::vector<bool> seen(perm.size(), false);
  bool identity = true;
  for (std::int64_t d = 0; d < rank; ++d) {
    const std::int64_t p = perm[static_cast<std::size_t>(d)];
    if (p < 0 || p >= rank || seen[static_cast<std::size_t>(p)]) return std::nullopt;
    seen[static_cast<std::size_t>(p)] = true;
    identity = identity && p == d;
  }
  if (identity || (perm.back() != rank - 1 && perm.back() != rank - 2)) return std::nullopt;
  return perm;
}

}  // namespace

std::optional<ScaledMatMulMatch> match_scaled_matmul(const graph::Graph& graph, std::size_t index) {
  const graph::Node& mm = graph.nodes()[index];
  if (!is_op(mm, "MatMul") || !mm.parts.empty() || mm.inputs.size() != 2 ||
      mm.outputs.size() != 1 || mm.inputs[0] == mm.inputs[1])
    return std::nullopt;
  ScaledMatMulMatch m{mm.inputs[0], mm.inputs[1], mm.outputs[0], 1.0, {}, {index}};
  for (std::string* operand : {&m.a, &m.b}) {
    const auto producer = graph.producer(*operand);
    if (!producer || !single_use_problem(graph, *operand, index).empty()) continue;
    const graph::Node& p = graph.nodes()[*producer];
    for (const std::string& x : p.inputs) {
      if (graph.is_constant(x)) continue;
      if (const auto factor = scalar_factor(graph, p, x)) {
        m.alpha *= *factor;
        m.parts.push_back(*producer);
        *operand = x;
        break;
      }
    }
  }
  if (graph.is_constant(m.a) || graph.is_constant(m.b) || constant_value(graph, m.a) ||
      constant_value(graph, m.b))
    return std::nullopt;
  if (const auto reader = sole_reader(graph, m.y)) {
    const graph::Node& r = graph.nodes()[*reader];
    if (const auto factor = scalar_factor(graph, r, m.y)) {
      m.alpha *= *factor;
      m.parts.push_back(*reader);
      m.y = r.outputs[0];
    }
  }
  if (const auto reader = sole_reader(graph, m.y)) {
    const graph::Node& r = graph.nodes()[*reader];
    if (auto perm = product_order(r)) {
      m.perm = std::move(*perm);
      m.parts.push_back(*reader);
      m.y = r.outputs[0];
    }
  }
  if (m.parts.size() == 1) return std::nullopt;
  return m;
}

std::string fuse_scaled_matmul(graph::Graph& graph, const ScaledMatMulMatch& m) {
  const graph::Node& mm = graph.nodes()[m.parts[0]];
  graph::Node fused;
  fused.name = mm.name;
  fused.op_type = "ScaledMatMul";
  fused.domain = "refold";
  fused.inputs = {m.a, m.b};
  fused.outputs = {m.y};
  fused.origin = origin_of(graph, m.parts);
  fused.attributes.set("alpha", static_cast<float>(m.alpha));
  if (!m.perm.empty()) fused.attributes.set("perm", m.perm);
  const std::size_t factors = m.parts.size() - 1 - (m.perm.empty() ? 0 : 1);
  const std::string note = fmt::format(
      "rewrote {} with {} scalar factors as alpha {:g} · (a · b){}", describe(mm), factors, m.alpha,
      m.perm.empty() ? "" : fmt::format(", written in order [{}]", fmt::join(m.perm, ", ")));
  replace_with_fused(graph, m.parts, std::move(fused));
  return note;
}

nn::ModulePtr build_scaled_matmul(const graph::Node& node) {
  REFOLD_CHECK(node.inputs.size() == 2 && node.outputs.size() == 1 && node.attributes.has("alpha"),
               "ScaledMatMul '{}': expects 2 inputs, 1 output and an alpha attribute", node.name);
  const float alpha = node.attributes.get_float("alpha", 1.0f);
  REFOLD_CHECK(std::isfinite(alpha), "ScaledMatMul '{}': alpha {} is not finite", node.name, alpha);
  const std::vector<std::int64_t> perm = node.attributes.get_ints("perm", {});
  std::vector<bool> seen(perm.size(), false);
  for (const std::int64_t p : perm) {
    REFOLD_CHECK(
        p >= 0 && p < static_cast<std::int64_t>(perm.size()) && !seen[static_cast<std::size_t>(p)],
        "ScaledMatMul '{}': perm [{}] is not a permutation", node.name, fmt::join(perm, ", "));
    seen[static_cast<std::size_t>(p)] = true;
  }
  return std::make_shared<ops::MatMul>(alpha, Shape(perm.begin(), perm.end()));
}

}  // namespace refold::passes::detail
