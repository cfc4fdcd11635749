// canonicalize: one computation that exporters write in several forms becomes the one form
// refold's fast kernels and fusions know.
//
// Patterns and rewrites (x is the non-constant input, y the last node's output; every value
// inside a pattern has exactly the readers shown and is not a graph output):
//   ReduceMean(x, axes {2, 3}, keepdims 1), x 4-d        → GlobalAveragePool(x)
//   ReduceMax(x, axes {2, 3}, keepdims 1), x 4-d         → GlobalMaxPool(x)
//     (axes as an attribute, opset < 18, or a constant input; negative axes counted from the
//     end: {−2, −1} too). The node keeps its name and output and is written as the new op.
//   GELU, as torch.onnx writes nn.GELU before opset 20 and in its variants:
//     t = Div(x, √2) or Mul(x, 1/√2);  e = Erf(t);  a = Add(e, 1);
//     y = Mul(Mul(x, a), 0.5)  |  Mul(x, Mul(a, 0.5))  |  Mul(Mul(x, 0.5), a)
//                                                        → Gelu(x) = ½x·(1 + erf(x/√2))
//     (operands of Add and Mul in either order), and its tanh approximation, as torch.onnx
//     writes gelu(approximate="tanh"): e = Tanh(Mul(Add(x, Mul(x·x·x, 0.044715)), √(2/π))) with
//     the same tail                                       → Gelu(x, approximate "tanh")
//     One fused node, named as the last Mul, whose
//     parts are the matched nodes: the exporter writes them back, so the file keeps its opset
//     (Gelu is an op from opset 20 on), and activation-fusion can take it into a conv.
//   GroupNorm, as exporters write it before opset 18 (passes/group_norm_pattern.h):
//     Reshape(x, [N, G, M]) → InstanceNormalization → Reshape(·, shape(x))
//                                                        → GroupNormalization(x), G groups
//     (one fused node, its parts the three; it keeps x's memory format, the Reshapes did not).
//   A patch unfold/fold, Reshape → Transpose → Reshape moving only spatial positions, x and y
//   4-d (passes/patch_shuffle.h)                         → PatchShuffle(x), channels_last kept
//   and a channel shuffle with the Concat before it and/or the Slices or Split after it
//   (passes/channel_route.h)                             → ChannelRoute(a, b, …): one pass
//   A MatMul of two computed operands with Mul/Div by one-element constants on its operands or
//   result — attention's scale — and/or a Transpose of the result keeping its rows or columns
//   innermost (passes/scaled_matmul.h)                   → ScaledMatMul(a, b), alpha, perm
//   Softmax(Add(x, c)) along the last axis — attention's position bias or mask
//   (passes/add_softmax.h)                               → AddSoftmax(x, c)
//   Div(x, Clip(ReduceL2(x, one axis, keepdims), min ε)) — F.normalize; the Clip may be a Max
//   or absent (passes/l2_normalize.h)                    → L2Normalize(x), axis, ε
//   ReduceSum(Reshape(x, [N, r, C, H, W]), axis 1) and ReduceSum(Mul(that, a), axis 1) — split
//   attention's sums over channel groups (passes/group_sum.h)  → GroupSum(x[, a]), groups r
//   Transpose(x, p) → MatMul(·, W) (→ Add(·, b)) → Transpose(·, p⁻¹), W a constant [K, N] — a
//   Linear along axis p[-1] (passes/axis_linear.h)       → AxisLinear(x, W[, b]), axis
//   Then a chain of Reshape/Flatten/Squeeze/Unsqueeze with at least two Transposes between,
//   ending with a reshape (passes/rearrange.h)           → Rearrange(x): one copy, not one each
//
// Why exact: a mean over H and W of an NCHW tensor, kept as [N, C, 1, 1], is GlobalAveragePool's
// definition (max likewise); the GELU forms compute ½x·(1 + erf(x/√2)) with the constants
// rounded to float32 (√2 and 1/√2 within 1e-6 relative, 1 and 0.5 exact), which the Gelu kernel
// computes in one pass — the same value up to the rounding of the intermediate steps.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>
#include <string>
#include <vector>

#include "ops/op.h"
#include "passes/add_softmax.h"
#include "passes/axis_linear.h"
#include "passes/branch_nodes.h"
#include "passes/channel_route.h"
#include "passes/group_norm_pattern.h"
#include "passes/group_sum.h"
#include "passes/known_values.h"
#include "passes/l2_normalize.h"
#include "passes/node_module.h"
#include "passes/passes.h"
#include "passes/patch_shuffle.h"
#include "passes/rearrange.h"
#include "passes/scaled_matmul.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;

// ---- a spatial ReduceMean / ReduceMax as a global pool ----

// Rewrites node `index` when it is a spatial mean or max; returns the note, or "". The input's
// rank and dtype come from what the graph declares or, where its input sizes are static, from
// its producers run on stand-ins.
std::string rewrite_spatial_reduce(graph::Graph& graph, std::size_t index,
                                   detail::StaticShapes& shapes) {
  graph::Node& node = graph.node(index);
  const bool mean = is_op(node, "ReduceMean"), max = is_op(node, "ReduceMax");
  if ((!mean && !max) || !node.parts.empty() || node.inputs.empty() || node.inputs[0].empty() ||
      node.outputs.size() != 1 || node.attributes.get_int("keepdims", 1) != 1)
    return {};
  const auto axes = detail::reduce_axes(graph, node);
  if (!axes) return {};
  const std::string& x = node.inputs[0];
  std::optional<std::size_t> rank;
  if (const auto known = detail::known_shape(graph, x)) rank = known->size();
  if (!rank) {
    if (const auto s = shapes.shape(x)) rank = s->size();
  }
  std::optional<DType> dtype = detail::known_dtype(graph, x);
  if (!dtype) dtype = shapes.dtype(x);
  if (rank != 4u || !dtype || !is_floating(*dtype)) return {};
  std::vector<std::int64_t> normalized;
  for (std::int64_t a : *axes) normalized.push_back(a < 0 ? a + 4 : a);
  std::sort(normalized.begin(), normalized.end());
  if (normalized != std::vector<std::int64_t>{2, 3}) return {};

  const std::string was = describe(node);
  node.op_type = mean ? "GlobalAveragePool" : "GlobalMaxPool";
  node.domain.clear();
  node.attributes = {};
  node.inputs.resize(1);
  node.origin = fmt::format("{} (over H and W)", was);
  node.source = -1;  // no longer the imported node: export writes it anew
  graph.set_module(index, module_for(graph, node));
  return fmt::format("rewrote {} over H and W as {}", was, node.op_type);
}

// ---- GELU written out with Erf ----

bool near(const graph::Graph& graph, const std::string& name, double value, double relative) {
  const auto c = detail::constant_value(graph, name);
  if (!c || c->numel() != 1 || !is_floating(c->dtype())) return false;
  return std::abs(static_cast<double>(c->item()) - value) <= relative * std::abs(value);
}

// The other operand of a binary node whose one operand is `value`, or "".
std::string other_operand(const graph::Node& node, const std::string& value) {
  if (node.inputs.size() != 2) return {};
  if (node.inputs[0] == value) return node.inputs[1];
  if (node.inputs[1] == value) return node.inputs[0];
  return {};
}

struct GeluMatch {
  std::string x, y;
  std::vector<std::size_t> parts;
  std::string approximate = "none";  // Gelu's attribute: "tanh" for the tanh form
};

constexpr double kConstantTolerance = 1e-6;  // √2 and 1/√2 as float32, relative

// From e = Erf(x/√2) or Tanh(√(2/π)·(x + 0.044715·x³)) on: a = Add(e, 1), then
// y = Mul(Mul(x, a), 0.5) | Mul(x, Mul(a, 0.5)) | Mul(Mul(x, 0.5), a). Appends the tail's nodes
// to m.parts and sets m.y; false when it is not there.
bool match_gelu_tail(const graph::Graph& graph, const std::string& e, GeluMatch& m) {
  const auto add = detail::sole_plain_reader(graph, e, "Add");
  if (!add || !near(graph, other_operand(graph.nodes()[*add], e), 1.0, 0.0)) return false;
  const std::string& a = graph.nodes()[*add].outputs[0];
  // The Mul reading a, and what it multiplies a by.
  const auto mul = detail::sole_plain_reader(graph, a, "Mul");
  if (!mul) return false;
  const graph::Node& first = graph.nodes()[*mul];
  const std::string by = other_operand(first, a);
  m.parts.push_back(*add);
  m.parts.push_back(*mul);
  if (by == m.x || near(graph, by, 0.5, 0.0)) {
    // (x · a) · 0.5 or x · (a · 0.5): one more Mul, by what the first did not multiply.
    const auto last = detail::sole_plain_reader(graph, first.outputs[0], "Mul");
    if (!last) return false;
    const std::string rest = other_operand(graph.nodes()[*last], first.outputs[0]);
    if (!(by == m.x ? near(graph, rest, 0.5, 0.0) : rest == m.x)) return false;
    m.parts.push_back(*last);
    m.y = graph.nodes()[*last].outputs[0];
    return true;
  }
  // (x · 0.5) · a: `by` is h = Mul(x, 0.5), read by this Mul alone.
  const auto half = graph.producer(by);
  if (!half || !detail::single_use_problem(graph, by, *mul).empty()) return false;
  const graph::Node& h = graph.nodes()[*half];
  if (!is_op(h, "Mul") || !h.parts.empty() || !near(graph, other_operand(h, m.x), 0.5, 0.0))
    return false;
  m.parts.push_back(*half);
  m.y = first.outputs[0];
  return true;
}

std::optional<GeluMatch> match_gelu(const graph::Graph& graph, std::size_t erf_index) {
  const graph::Node& erf = graph.nodes()[erf_index];
  if (!is_op(erf, "Erf") || !erf.parts.empty() || erf.inputs.size() != 1 || erf.outputs.size() != 1)
    return std::nullopt;
  // t = x / √2 or x · (1/√2), read by the Erf alone.
  const std::string& t = erf.inputs[0];
  const auto scale = graph.producer(t);
  if (!scale || !detail::single_use_problem(graph, t, erf_index).empty()) return std::nullopt;
  const graph::Node& s = graph.nodes()[*scale];
  if (!s.parts.empty() || s.inputs.size() != 2) return std::nullopt;
  GeluMatch m;
  if (is_op(s, "Div") && near(graph, s.inputs[1], std::numbers::sqrt2, kConstantTolerance)) {
    m.x = s.inputs[0];
  } else if (is_op(s, "Mul")) {
    for (std::size_t k : {0, 1}) {
      if (near(graph, s.inputs[k], 1.0 / std::numbers::sqrt2, kConstantTolerance))
        m.x = s.inputs[1 - k];
    }
  }
  if (m.x.empty() || graph.is_constant(m.x)) return std::nullopt;
  m.parts = {*scale, erf_index};
  if (!match_gelu_tail(graph, erf.outputs[0], m)) return std::nullopt;
  return m;
}

// The node writing `value` when it is a plain `op` read by `reader` alone, else nullptr.
const graph::Node* single_use_producer(const graph::Graph& graph, const std::string& value,
                                       std::size_t reader, const char* op,
                                       std::vector<std::size_t>& parts) {
  const auto p = graph.producer(value);
  if (!p || !detail::single_use_problem(graph, value, reader).empty()) return nullptr;
  const graph::Node& n = graph.nodes()[*p];
  if (!is_op(n, op) || !n.parts.empty() || n.inputs.size() != 2 || n.outputs.size() != 1)
    return nullptr;
  parts.push_back(*p);
  return &n;
}

// GELU's tanh approximation as torch.onnx writes gelu(approximate="tanh"):
//   c = Mul(x, Mul(x, x)) (or Mul(Mul(x, x), x), or Pow(x, 3));  u = Add(x, Mul(c, 0.044715));
//   e = Tanh(Mul(u, √(2/π)));  then the tail above      → Gelu(x, approximate "tanh")
// (every binary's operands in either order).
std::optional<GeluMatch> match_gelu_tanh(const graph::Graph& graph, std::size_t tanh_index) {
  const graph::Node& tanh = graph.nodes()[tanh_index];
  if (!is_op(tanh, "Tanh") || !tanh.parts.empty() || tanh.inputs.size() != 1 ||
      tanh.outputs.size() != 1)
    return std::nullopt;
  GeluMatch m;
  const graph::Node* scale = single_use_producer(graph, tanh.inputs[0], tanh_index, "Mul", m.parts);
  const double sqrt_2_over_pi = std::sqrt(2.0 / std::numbers::pi);
  std::string u;
  for (std::size_t k : {0, 1})
    if (scale && near(graph, scale->inputs[k], sqrt_2_over_pi, kConstantTolerance))
      u = scale->inputs[1 - k];
  if (u.empty()) return std::nullopt;
  const graph::Node* sum = single_use_producer(graph, u, m.parts.back(), "Add", m.parts);
  if (!sum) return std::nullopt;
  // One operand of the Add is x, the other c · 0.044715 with c = x³.
  for (std::size_t k : {0, 1}) {
    std::vector<std::size_t> cubic;
    const graph::Node* times =
        single_use_producer(graph, sum->inputs[1 - k], m.parts.back(), "Mul", cubic);
    if (!times) continue;
    const std::string& x = sum->inputs[k];
    for (std::size_t j : {0, 1}) {
      if (!near(graph, times->inputs[j], 0.044715, kConstantTolerance)) continue;
      const std::string& c = times->inputs[1 - j];
      std::vector<std::size_t> parts = cubic;
      if (const auto p = graph.producer(c); p && is_op(graph.nodes()[*p], "Pow")) {
        const graph::Node& pow = graph.nodes()[*p];
        if (!pow.parts.empty() || pow.inputs.size() != 2 || pow.inputs[0] != x ||
            !near(graph, pow.inputs[1], 3.0, 0.0) ||
            !detail::single_use_problem(graph, c, cubic[0]).empty())
          continue;
        parts.push_back(*p);
      } else {
        const graph::Node* outer = single_use_producer(graph, c, cubic[0], "Mul", parts);
        if (!outer) continue;
        // x · (x · x) or (x · x) · x: one operand x, the other a Mul(x, x) read by it alone.
        const std::size_t outer_index = parts.back();
        const std::size_t other = outer->inputs[0] == x ? 1 : 0;
        if (outer->inputs[1 - other] != x) continue;
        const graph::Node* square =
            single_use_producer(graph, outer->inputs[other], outer_index, "Mul", parts);
        if (!square || square->inputs[0] != x || square->inputs[1] != x) continue;
      }
      if (graph.is_constant(x)) return std::nullopt;
      m.x = x;
      m.parts.insert(m.parts.end(), parts.begin(), parts.end());
      m.parts.push_back(tanh_index);
      if (!match_gelu_tail(graph, tanh.outputs[0], m)) return std::nullopt;
      m.approximate = "tanh";
      return m;
    }
  }
  return std::nullopt;
}

std::string fuse_gelu(graph::Graph& graph, const GeluMatch& m) {
  const std::size_t last = *std::max_element(m.parts.begin(), m.parts.end());
  graph::Node gelu;
  gelu.name = graph.nodes()[last].name;
  gelu.op_type = "Gelu";
  if (m.approximate != "none") gelu.attributes.set("approximate", m.approximate);
  gelu.inputs = {m.x};
  gelu.outputs = {m.y};
  gelu.origin = detail::origin_of(graph, m.parts);
  const std::string note =
      fmt::format("rewrote {} ({}) as Gelu", describe(graph.nodes()[last]), gelu.origin);
  detail::replace_with_fused(graph, m.parts, std::move(gelu));
  return note;
}

}  // namespace

PassReport canonicalize(graph::Graph& graph) {
  PassReport report{"canonicalize", false, {}};
  detail::StaticShapes shapes(graph);
  for (std::size_t i = 0; i < graph.nodes().size();) {
    std::string note = rewrite_spatial_reduce(graph, i, shapes);
    std::size_t next = i + 1;
    if (note.empty()) {
      auto gelu = match_gelu(graph, i);
      if (!gelu) gelu = match_gelu_tanh(graph, i);
      if (gelu) {
        // Nodes after the first part moved; look again from there.
        next = *std::min_element(gelu->parts.begin(), gelu->parts.end());
        note = fuse_gelu(graph, *gelu);
      } else if (const auto norm = detail::match_group_norm(graph, i, shapes)) {
        next = *std::min_element(norm->parts.begin(), norm->parts.end());
        note = detail::fuse_group_norm(graph, *norm);
      } else if (const auto shuffle = detail::match_patch_shuffle(graph, i, shapes)) {
        next = *std::min_element(shuffle->parts.begin(), shuffle->parts.end());
        note = detail::fuse_patch_shuffle(graph, *shuffle);
      } else if (const auto route = detail::match_channel_route(graph, i, shapes)) {
        next = *std::min_element(route->parts.begin(), route->parts.end());
        note = detail::fuse_channel_route(graph, *route);
      } else if (const auto product = detail::match_scaled_matmul(graph, i)) {
        next = *std::min_element(product->parts.begin(), product->parts.end());
        note = detail::fuse_scaled_matmul(graph, *product);
      } else if (const auto softmax = detail::match_add_softmax(graph, i, shapes)) {
        next = *std::min_element(softmax->parts.begin(), softmax->parts.end());
        note = detail::fuse_add_softmax(graph, *softmax);
      } else if (const auto normalize = detail::match_l2_normalize(graph, i)) {
        next = *std::min_element(normalize->parts.begin(), normalize->parts.end());
        note = detail::fuse_l2_normalize(graph, *normalize);
      } else if (const auto sum = detail::match_group_sum(graph, i, shapes)) {
        next = sum->mul.value_or(sum->reduce);
        note = detail::fuse_group_sum(graph, *sum);
      } else if (const auto linear = detail::match_axis_linear(graph, i)) {
        next = *std::min_element(linear->parts.begin(), linear->parts.end());
        note = detail::fuse_axis_linear(graph, *linear);
      }
    }
    i = next;
    if (note.empty()) continue;
    report.notes.push_back(std::move(note));
    report.changed = true;
  }
  // Then the data-movement chains the patterns above left (a fused node ends a chain).
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    const auto chain = detail::match_rearrange(graph, i, shapes);
    if (!chain) continue;
    report.notes.push_back(detail::fuse_rearrange(graph, *chain));
    report.changed = true;
    i = *std::min_element(chain->parts.begin(), chain->parts.end());
  }
  return report;
}

}  // namespace refold::passes
