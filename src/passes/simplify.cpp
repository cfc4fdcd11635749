// simplify: algebraic no-ops that exporters write, removed so that the pattern passes after it
// (bn-folding, reparameterize, activation-fusion) see the ops they look for.
//
// Patterns and rewrites (x is the non-constant operand, y the node's output):
//   Add(x, 0), Add(0, x), Sub(x, 0)      → Identity(x)   every element of the constant is ±0
//   Mul(x, 1), Mul(1, x), Div(x, 1)      → Identity(x)   every element of the constant is 1
//   Dropout(x) in inference              → Identity(x)   training_mode absent or a constant 0,
//                                                         the mask output unused
//   Transpose(x, p) with p[i] = i        → Identity(x)
//   Transpose(Transpose(x, p1), p2) with p1[p2[i]] = i → Identity(x)
//   Reshape(Reshape(x, s1), s2)          → Reshape(x, s2)  s2 constant, no 0 that copies a dim
//   Pad(x, pads) with every pad 0        → Identity(x)
//   Slice(x, …) with positive steps, Reshape, Flatten, Squeeze, Unsqueeze or Expand whose
//                                        output has x's static shape → Identity(x)
//   op(Expand(v, s), w), op(w, Expand(v, s)) for op Add/Sub/Mul/Div, where op(v, w) has the
//                                        same static shape → op reads v (F.normalize's
//                                        x / norm.expand_as(x): the op broadcasts v itself)
// A rewritten node keeps its name and output; it becomes an Identity reading x (or, for the
// Reshape pair, the outer Reshape reads x); the bypassed Expand or inner Reshape goes when
// nothing else reads it. The dead-code pass after canonicalize rewires every reader of an
// Identity to x and drops what no longer feeds anything: the inner Transpose when nothing else
// reads it, the zero/one constants. (dead-code also removes the
// Identity nodes of the model itself, so this pass does not touch them.)
//
// Why exact (same values bit for bit, same shape, same dtype):
//   - x·1 = x and x/1 = x for every IEEE value (±0, subnormals, ±∞, NaN) and every int64.
//   - x + 0 = x for every int64. In IEEE round-to-nearest, x + (−0) = x and x − (+0) = x for
//     every x, signed zeros included; x + (+0) = x and x − (−0) = x for every x except x = −0,
//     where the sum is +0. The rewrite accepts a zero of either sign, as ONNX Runtime and
//     onnxsim do: where x = −0 the optimized graph yields −0 where the original yielded +0.
//     The two compare equal, and they differ only in what a later op that looks at the sign
//     of a zero (1/y, atan2, copysign) makes of them. (refold runs Sub as x + (−1·c): the same
//     cases. It sets no flush-to-zero mode, so x + 0 keeps subnormals.)
//   - Dropout at inference is the identity on its data output (ONNX Dropout-12 spec).
//   - Expand repeats v along the dims it enlarges; a broadcasting op repeats v along the same
//     dims when the result's shape is the same, so every output element reads the same v.
//   - Slice, Reshape, …: see match_same_shape. GhostNet's cat(x1, x2)[:, :oup] is such a Slice
//     whenever oup is even; EfficientViT's feat.view(B, -1, H, W) of a conv's [B, C, H, W]
//     output such a Reshape (which the layout plan would otherwise count as a permute).
//   - Transpose: output dim i is input dim p[i], so the pair moves dim p1[p2[i]] to i.
//   - Reshape reads its input in row-major order and writes the same sequence; two of them in
//     a row read x in row-major order, and so does the merged one. An s2 entry −1 is inferred
//     from the element count, which the inner Reshape does not change; an entry 0 (without
//     allowzero) copies a dim of the inner Reshape's output, so that case stays.
//
// Preconditions (otherwise the node stays and, for a candidate, a note says why):
//   - Add/Sub/Mul/Div: the result must have x's shape and dtype. Broadcasting can enlarge it:
//     x [4] + zeros [2, 4] is [2, 4]. So the constant c must have rank 0, or x's rank and dims
//     must be known (a graph input's or value_info's declared shape, a constant, a Conv's
//     output with a constant weight: its rank and channel count, or an element-wise op that
//     keeps its input's shape) and every dim of c, aligned from the right, must be 1 or the
//     known equal dim of x. x's dtype must be known (declared, a constant, a Conv's weight, or
//     followed through ops that keep their input's dtype) and equal c's: a mixed-dtype Add is
//     an error at run time, which an Identity would hide.
//   - The output of a node that would become an Identity is not a graph output: dead-code
//     keeps such an Identity (the output name is the graph's interface), so nothing is gained.
//   - Transpose with no perm attribute reverses the dims: its permutation needs x's rank.
//   - Fused nodes (parts not empty) and nodes of other domains are left alone.
// A rewrite may turn an invalid run into a valid one (a Reshape pair whose inner shape does not
// fit x, a Transpose pair whose perms do not match x's rank); valid runs are unchanged.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kernels/reference/binary_checks.h"
#include "passes/branch_nodes.h"
#include "passes/known_values.h"
#include "passes/node_module.h"
#include "passes/passes.h"
#include "refold/nn/basic.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;

using detail::known_dtype;
using detail::known_shape;
using detail::KnownShape;

bool all_elements_equal(const Tensor& t, float v) {
  const std::vector<float> values = t.to_vector();  // exact for bfloat16; int64 near 0 and 1 too
  return std::all_of(values.begin(), values.end(), [&](float e) { return e == v; });
}

std::string shape_text(const KnownShape& shape) {
  std::vector<std::string> dims;
  for (std::int64_t d : shape) dims.push_back(d >= 0 ? std::to_string(d) : std::string("?"));
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Why op(x, c) might not have exactly x's shape and dtype, or "".
std::string broadcast_problem(const graph::Graph& graph, const std::string& x, const Tensor& c) {
  const std::optional<DType> xt = known_dtype(graph, x);
  if (!xt) return fmt::format("the dtype of '{}' is not known", x);
  if (*xt != c.dtype())
    return fmt::format("'{}' is {} but the constant is {}", x, dtype_name(*xt),
                       dtype_name(c.dtype()));
  const Shape& cs = c.sizes();
  if (cs.empty()) return {};  // a scalar broadcasts into any shape
  const std::optional<KnownShape> xs = known_shape(graph, x);
  if (!xs)
    return fmt::format(
        "the rank of '{}' is not known, and the constant of shape {} could "
        "broadcast it to a larger shape",
        x, shape_text(cs));
  if (cs.size() > xs->size())
    return fmt::format("the constant of shape {} broadcasts '{}' of shape {} to a higher rank",
                       shape_text(cs), x, shape_text(*xs));
  for (std::size_t k = 1; k <= cs.size(); ++k) {
    const std::int64_t cd = cs[cs.size() - k], xd = (*xs)[xs->size() - k];
    if (cd == 1 || cd == xd) continue;
    return fmt::format(
        "the constant of shape {} could broadcast '{}' of shape {} to a larger "
        "shape (dim {} from the right)",
        shape_text(cs), x, shape_text(*xs), k);
  }
  return {};
}

// A rewrite found for a node: it becomes Identity(source), or (a Reshape pair, an expanded
// operand) one of its inputs becomes source.
struct NoOp {
  std::string source;
  std::string what;  // for the note and the node's origin: "x + 0", …
  bool to_identity = true;
  std::size_t input = 0;  // without to_identity: the input that becomes source
};
// Not a candidate / a candidate declined (the reason) / a rewrite.
using Candidate = std::variant<std::monostate, std::string, NoOp>;

// Add/Sub with a zero, Mul/Div with a one.
Candidate match_arithmetic(const graph::Graph& graph, const graph::Node& node) {
  const bool add = is_op(node, "Add"), sub = is_op(node, "Sub");
  const bool mul = is_op(node, "Mul"), div = is_op(node, "Div");
  if (!(add || sub || mul || div) || node.inputs.size() != 2 || node.outputs.size() != 1) return {};
  const float neutral = add || sub ? 0.0f : 1.0f;
  static const char* const kWhat[] = {"x + 0", "0 + x", "x - 0", "x * 1", "1 * x", "x / 1"};
  std::string problem;
  // The constant's position: the second input, or for Add/Mul the first.
  for (std::size_t side : {std::size_t{1}, std::size_t{0}}) {
    if (side == 0 && (sub || div)) break;
    const std::string& x = node.inputs[1 - side];
    if (x.empty()) continue;
    const auto c = detail::constant_value(graph, node.inputs[side]);
    if (!c || !all_elements_equal(*c, neutral)) continue;
    if (std::string why = broadcast_problem(graph, x, *c); !why.empty()) {
      if (problem.empty()) problem = why;
      continue;
    }
    const int what = add ? (side == 1 ? 0 : 1) : sub ? 2 : mul ? (side == 1 ? 3 : 4) : 5;
    return NoOp{x, kWhat[what]};
  }
  if (!problem.empty()) return problem;
  return {};
}

Candidate match_dropout(const graph::Graph& graph, const graph::Node& node) {
  if (!is_op(node, "Dropout") || node.inputs.empty() || node.inputs[0].empty() ||
      node.outputs.empty())
    return {};
  if (node.inputs.size() > 2 && !node.inputs[2].empty()) {
    const auto training = detail::constant_value(graph, node.inputs[2]);
    if (!training)
      return fmt::format("its training_mode '{}' is computed at run time", node.inputs[2]);
    if (!all_elements_equal(*training, 0.0f))
      return fmt::format("its training_mode '{}' is true", node.inputs[2]);
  }
  if (node.outputs.size() > 1 && !node.outputs[1].empty() &&
      (!graph.consumers(node.outputs[1]).empty() || graph.is_graph_output(node.outputs[1])))
    return fmt::format("its mask output '{}' is used", node.outputs[1]);
  return NoOp{node.inputs[0], "inference Dropout"};
}

// A Transpose's permutation: the perm attribute, else the reversal of its input's dims.
std::optional<std::vector<std::int64_t>> perm_of(const graph::Graph& graph,
                                                 const graph::Node& node) {
  if (node.attributes.has("perm")) return node.attributes.get_ints("perm");
  const auto shape = known_shape(graph, node.inputs[0]);
  if (!shape) return std::nullopt;
  std::vector<std::int64_t> perm;
  for (std::size_t i = shape->size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  return perm;
}

bool is_identity_perm(const std::vector<std::int64_t>& perm) {
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<std::int64_t>(i)) return false;
  return true;
}

bool is_plain_unary(const graph::Node& node, const char* op_type) {
  return is_op(node, op_type) && node.parts.empty() && node.inputs.size() == 1 &&
         !node.inputs[0].empty() && node.outputs.size() == 1;
}

Candidate match_transpose(const graph::Graph& graph, const graph::Node& node) {
  if (!is_plain_unary(node, "Transpose")) return {};
  const auto p2 = perm_of(graph, node);
  if (p2 && is_identity_perm(*p2)) return NoOp{node.inputs[0], "Transpose by the identity"};
  const auto p = graph.producer(node.inputs[0]);
  if (!p || !is_plain_unary(graph.nodes()[*p], "Transpose")) return {};
  const graph::Node& inner = graph.nodes()[*p];
  const auto p1 = perm_of(graph, inner);
  if (!p1 || !p2)
    return fmt::format("the pair with {}: a perm is implied by a rank that is not known",
                       describe(inner));
  // Output dim i of the pair is dim p1[p2[i]] of the inner Transpose's input.
  const auto n = static_cast<std::int64_t>(p1->size());
  const bool compose = p1->size() == p2->size() &&
                       std::all_of(p2->begin(), p2->end(), [&](auto i) { return i >= 0 && i < n; });
  if (!compose)
    return fmt::format("the pair with {}: perms [{}] and [{}] do not compose", describe(inner),
                       fmt::join(*p1, ", "), fmt::join(*p2, ", "));
  std::vector<std::int64_t> composed;
  for (std::int64_t i : *p2) composed.push_back((*p1)[static_cast<std::size_t>(i)]);
  if (!is_identity_perm(composed))
    return fmt::format("the pair with {} permutes by [{}], not the identity", describe(inner),
                       fmt::join(composed, ", "));
  return NoOp{inner.inputs[0], fmt::format("undoes {}", describe(inner))};
}

Candidate match_reshape_pair(const graph::Graph& graph, const graph::Node& node) {
  if (!is_op(node, "Reshape") || node.inputs.size() != 2 || node.inputs[0].empty() ||
      node.outputs.size() != 1)
    return {};
  const auto p = graph.producer(node.inputs[0]);
  if (!p) return {};
  const graph::Node& inner = graph.nodes()[*p];
  if (!is_op(inner, "Reshape") || !inner.parts.empty() || inner.inputs.empty() ||
      inner.inputs[0].empty())
    return {};
  const std::string pair = fmt::format("the pair with {}", describe(inner));
  const auto shape = detail::constant_value(graph, node.inputs[1]);
  if (!shape)
    return fmt::format("{}: its shape '{}' is computed at run time", pair, node.inputs[1]);
  if (shape->dtype() != DType::Int64 || shape->dim() > 1)
    return fmt::format("{}: its shape '{}' is not a 1-d int64 tensor", pair, node.inputs[1]);
  const std::vector<float> dims = shape->to_vector();  // only compared with 0
  const bool copies = std::any_of(dims.begin(), dims.end(), [](float d) { return d == 0; });
  if (copies && node.attributes.get_int("allowzero", 0) == 0)
    return fmt::format("{}: its shape '{}' copies a dim (0) of {}'s output", pair, node.inputs[1],
                       describe(inner));
  return NoOp{inner.inputs[0], fmt::format("merged with {}", describe(inner)), false};
}

Candidate match_zero_pad(const graph::Graph& graph, const graph::Node& node) {
  if (!is_op(node, "Pad") || node.inputs.size() < 2 || node.inputs[0].empty() ||
      node.outputs.size() != 1)
    return {};
  const auto pads = detail::constant_value(graph, node.inputs[1]);
  if (!pads || pads->numel() == 0 || !all_elements_equal(*pads, 0.0f)) return {};
  return NoOp{node.inputs[0], "Pad by zeros"};
}

// An op that writes its input's elements in their order — a Slice with positive steps (every
// element it keeps, in order), Reshape, Flatten, Squeeze, Unsqueeze (a new shape over the same
// row-major sequence), Expand (each element repeated) — whose output has its input's static
// shape: it keeps every element where it was. For the Slice: it keeps element i of a sliced dim
// at start + i·step, and keeping all n elements with a positive step takes start 0, step 1 (or
// n ≤ 1, where any start that keeps one element is 0).
Candidate match_same_shape(const graph::Graph& graph, const graph::Node& node,
                           detail::StaticShapes& shapes) {
  static constexpr const char* kOrderKeeping[] = {"Slice",   "Reshape",   "Flatten",
                                                  "Squeeze", "Unsqueeze", "Expand"};
  const bool order_keeping = std::any_of(std::begin(kOrderKeeping), std::end(kOrderKeeping),
                                         [&](const char* op) { return is_op(node, op); });
  if (!order_keeping || node.inputs.empty() || node.inputs[0].empty() || node.outputs.size() != 1)
    return {};
  if (is_op(node, "Slice") && node.inputs.size() > 4 && !node.inputs[4].empty()) {
    const auto steps = detail::constant_value(graph, node.inputs[4]);
    if (!steps) return {};
    const std::vector<float> values = steps->to_vector();
    if (std::any_of(values.begin(), values.end(), [](float step) { return step <= 0; })) return {};
  }
  const std::optional<Shape> in = shapes.shape(node.inputs[0]);
  if (!in || shapes.shape(node.outputs[0]) != in) return {};
  return NoOp{node.inputs[0], fmt::format("{} to the input's own shape", node.op_type)};
}

// An arithmetic op reading an Expand whose enlargement it would make itself.
Candidate match_expanded_operand(const graph::Graph& graph, const graph::Node& node,
                                 detail::StaticShapes& shapes) {
  const bool arithmetic =
      is_op(node, "Add") || is_op(node, "Sub") || is_op(node, "Mul") || is_op(node, "Div");
  if (!arithmetic || node.inputs.size() != 2 || node.outputs.size() != 1) return {};
  for (std::size_t k = 0; k < 2; ++k) {
    const auto producer = graph.producer(node.inputs[k]);
    if (!producer) continue;
    const graph::Node& expand = graph.nodes()[*producer];
    if (!is_op(expand, "Expand") || !expand.parts.empty() || expand.inputs.empty() ||
        expand.inputs[0].empty())
      continue;
    const std::string& v = expand.inputs[0];
    const auto vs = shapes.shape(v);
    const auto ws = shapes.shape(node.inputs[1 - k]);
    const auto ys = shapes.shape(node.outputs[0]);
    // v broadcasts to the Expand's output, which broadcasts with w, so v and w broadcast too.
    if (!vs || !ws || !ys || reference::detail::broadcast_shape(*vs, *ws, "Expand") != *ys)
      continue;
    return NoOp{v, "the op broadcasts the Expand's input itself", false, k};
  }
  return {};
}

Candidate match_no_op(const graph::Graph& graph, const graph::Node& node,
                      detail::StaticShapes& shapes) {
  if (!node.parts.empty() || node.outputs.empty() || node.outputs[0].empty()) return {};
  using Matcher = Candidate (*)(const graph::Graph&, const graph::Node&);
  static constexpr Matcher kMatchers[] = {match_arithmetic, match_dropout, match_transpose,
                                          match_reshape_pair, match_zero_pad};
  for (Matcher match : kMatchers) {
    Candidate c = match(graph, node);
    if (!std::holds_alternative<std::monostate>(c)) return c;
  }
  Candidate c = match_same_shape(graph, node, shapes);
  if (!std::holds_alternative<std::monostate>(c)) return c;
  return match_expanded_operand(graph, node, shapes);
}

// Rewrites node `index`; returns how many nodes before it went (0 or 1).
std::size_t apply_no_op(graph::Graph& graph, std::size_t index, const NoOp& no_op) {
  graph::Node& node = graph.node(index);
  node.origin = fmt::format("{} ({})", describe(node), no_op.what);
  node.source = -1;  // no longer the imported node: export writes it anew
  if (!no_op.to_identity) {
    // The bypassed node (the Expand, the inner Reshape) goes too when nothing else reads it,
    // so that the patterns after this pass find its input read once (F.normalize's norm).
    const std::string bypassed = std::exchange(node.inputs[no_op.input], no_op.source);
    const auto producer = graph.producer(bypassed);
    if (!producer || !graph.consumers(bypassed).empty() || graph.is_graph_output(bypassed) ||
        graph.nodes()[*producer].outputs.size() != 1)
      return 0;
    graph.erase_node(*producer);
    return 1;
  }
  node.op_type = "Identity";
  node.domain.clear();
  node.attributes = {};
  node.inputs = {no_op.source};
  node.outputs.resize(1);  // a Dropout's unused mask goes
  graph.set_module(index, module_for(graph, node));
  return 0;
}

}  // namespace

PassReport simplify_algebra(graph::Graph& graph) {
  PassReport report{"simplify", false, {}};
  // A rewrite keeps every value's shape, so one instance serves the whole pass.
  detail::StaticShapes shapes(graph);
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    const graph::Node& node = graph.nodes()[i];
    const Candidate c = match_no_op(graph, node, shapes);
    if (const auto* why = std::get_if<std::string>(&c)) {
      report.notes.push_back(fmt::format("kept {}: {}", describe(node), *why));
      continue;
    }
    const auto* no_op = std::get_if<NoOp>(&c);
    if (!no_op) continue;
    if (no_op->to_identity && graph.is_graph_output(node.outputs[0])) {
      report.notes.push_back(fmt::format("kept {} ({}): its output '{}' is a graph output",
                                         describe(node), no_op->what, node.outputs[0]));
      continue;
    }
    const std::string note =
        no_op->to_identity
            ? fmt::format("{} ({}) → Identity of '{}'", describe(node), no_op->what, no_op->source)
            : fmt::format("{} ({}) now reads '{}'", describe(node), no_op->what, no_op->source);
    report.notes.push_back("simplified " + note);
    i -= apply_no_op(graph, i, *no_op);
    report.changed = true;
  }
  graph.verify();
  return report;
}

}  // namespace refold::passes
