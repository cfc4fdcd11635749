// bn-folding: a per-channel affine map right after a layer with constant weights becomes part of
// the layer — a BatchNormalization after a Conv; a BatchNormalization, an Add/Sub/Mul/Div by a
// per-channel constant or a Neg after a ConvTranspose, a Gemm or a MatMul.
//
// Patterns and rewrites (the affine node's output name survives):
//   x → Conv(W, b) → BatchNormalization → y                 x → Conv(W', b') → y
//   x → ConvTranspose(W, b) → A → y                         x → ConvTranspose(W', b') → y
//   x → Gemm(B, C) → M* → A → y                             x → Gemm(B', C') → M* → y
//   x → MatMul(W) [→ Add(b)] → M* → A → y                   x → MatMul(W') [→ Add(b')] → M* → y
// where A is y = a·v + t per channel (reparam::ChannelAffine): BN in inference (a = γ/√(σ² + ε),
// t = β − μ·a), Mul or Div by a constant, Add or Sub of one, Neg. The Add after a MatMul is its
// bias (a Linear on a 3-d input, as torch.onnx writes it); a MatMul without one gets an Add of t
// where t ≠ 0 (LeViT's Linear → BatchNorm1d: the BN becomes that Add), and an Add right after a
// MatMul without a bias is that bias, left as it is. M is a Reshape, Flatten or Transpose.
//
// Why exact: a layer is linear in its weights and bias, so a·(W∗x + b) + t = (W·a)∗x + (b·a + t),
// the scale on the weight slices that write each output channel (reparam::kernel_algebra.h):
// W[o] of a Conv (fold_batch_norm), W[g·(in/g) + i, j] of a ConvTranspose
// (fold_affine_into_conv_transpose), the feature column of a Gemm's or MatMul's weight
// (fold_affine_into_linear). Only along the axis the layer writes its channels on — axis 1 of a
// Conv's or ConvTranspose's 4-d output, the last axis of a Gemm's or MatMul's (or where a
// Transpose moves it): so a BN after a Gemm or MatMul folds only where the features are its axis
// 1 — a 2-d input [N, C], or [N, C, L] after a Transpose (BatchNorm1d on a sequence) — and a
// constant only where it broadcasts along that axis alone (detail::axis_values: [C], [1, C], …
// of no larger rank than the value). A Reshape or Flatten between them keeps every feature
// where the features are the last axis and it keeps its size C: both keep the row-major order,
// and the feature of an element is its flat index mod C. (A per-channel Mul or Add after a Conv is
// the general rule's, in reparameterize, which also merges it across branches.)
//
// Preconditions (docs/reliability.md F18–F23, ONNX Runtime's ConvBNFusion and MatMulBNFusion):
// every value between the layer and the affine node feeds only the next node (a layer's output
// may also feed a Shape, which reads the shape the rewrite keeps) and is not a graph output;
// weights and parameters are constants (a weight read elsewhere too stays for those readers:
// the folded layer gets its own); BN in inference mode with no optional output used; σ² ≥ 0 and
// σ² + ε ≠ 0 per channel; a Gemm's C absent or per feature. Otherwise the nodes stay as they are
// and the note says why.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "ops/op.h"
#include "passes/branch_nodes.h"
#include "passes/known_values.h"
#include "passes/node_module.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/reparam/module_kernels.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;

// The affine node's one non-constant input, or "" when the node is not a candidate.
std::string data_operand(const graph::Graph& g, const graph::Node& n) {
  if (!n.parts.empty() || n.inputs.empty() || n.outputs.empty()) return {};
  if (is_op(n, "BatchNormalization") || is_op(n, "Neg")) return n.inputs[0];
  if (!is_op(n, "Add") && !is_op(n, "Sub") && !is_op(n, "Mul") && !is_op(n, "Div")) return {};
  if (n.inputs.size() != 2) return {};
  const bool c0 = detail::constant_value(g, n.inputs[0]).has_value();
  const bool c1 = detail::constant_value(g, n.inputs[1]).has_value();
  return c0 == c1 ? std::string() : n.inputs[c0 ? 1 : 0];
}

bool is_matrix_product(const graph::Node& n) {
  return (is_op(n, "Gemm") || is_op(n, "MatMul")) && n.parts.empty();
}

// The nodes from the layer to the affine node: the layer, a MatMul's bias Add, the Reshapes,
// Flattens and Transposes, in graph order.
struct Chain {
  std::size_t layer = 0;
  std::optional<std::size_t> bias;
  std::vector<std::size_t> reshapes;
};

// The chain ending at affine node `a` (reading `v`), or nullopt when no layer is behind it.
std::optional<Chain> find_chain(const graph::Graph& g, const graph::Node& a, std::string v) {
  constexpr int kMaxReshapes = 4;
  Chain c;
  for (int depth = 0; depth <= kMaxReshapes + 1; ++depth) {
    const auto p = g.producer(v);
    if (!p) return std::nullopt;
    const graph::Node& n = g.nodes()[*p];
    if (is_op(n, "Conv") || is_op(n, "ConvTranspose")) {
      // A Conv folds a BN here; its other affine steps are reparameterize's.
      if (!c.reshapes.empty() || c.bias || (is_op(n, "Conv") && !is_op(a, "BatchNormalization")))
        return std::nullopt;
      c.layer = *p;
      return c;
    }
    if (is_matrix_product(n)) {
      if (c.bias && !is_op(n, "MatMul")) return std::nullopt;
      c.layer = *p;
      std::reverse(c.reshapes.begin(), c.reshapes.end());
      return c;
    }
    if ((is_op(n, "Reshape") || is_op(n, "Flatten") || is_op(n, "Transpose")) && n.parts.empty() &&
        !c.bias) {
      c.reshapes.push_back(*p);
      v = n.inputs.at(0);
      continue;
    }
    // MatMul → Add(b): the bias.
    const std::string x = data_operand(g, n);
    if (!c.bias && is_op(n, "Add") && !x.empty()) {
      const auto q = g.producer(x);
      if (!q || !is_op(g.nodes()[*q], "MatMul")) return std::nullopt;
      c.bias = *p;
      v = x;
      continue;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// A Shape or Size reading `v`: it reads only the shape, which the rewrite keeps.
bool reads_only_shape(const graph::Node& n) {
  const ops::OpDef* def = ops::find_op(n);
  return def && def->shape == ops::ShapeRule::InputShapesOnly;
}

// Why `value` is not read by `next` alone (a shapes-only reader is allowed where `shape_readers`),
// or "".
std::string use_problem(const graph::Graph& g, const std::string& value, std::size_t next,
                        bool shape_readers) {
  if (g.is_graph_output(value)) return fmt::format("'{}' is a graph output", value);
  std::vector<std::size_t> users = g.consumers(value);
  if (shape_readers)
    users.erase(
        std::remove_if(users.begin(), users.end(),
                       [&](std::size_t u) { return u != next && reads_only_shape(g.nodes()[u]); }),
        users.end());
  const auto& ins = g.nodes()[next].inputs;
  if (users.size() == 1 && users[0] == next) {
    if (std::count(ins.begin(), ins.end(), value) == 1) return {};
    return fmt::format("'{}' is read twice by {}", value, describe(g.nodes()[next]));
  }
  std::string names;
  for (std::size_t u : users) names += (names.empty() ? "" : ", ") + describe(g.nodes()[u]);
  return fmt::format("'{}' has {} consumers ({})", value, users.size(), names);
}

// A fold to make: the new nodes in order (the last writes the affine node's output) and what
// they replace.
struct Fold {
  std::vector<graph::Node> nodes;
  std::vector<std::size_t> erase;
  std::string note;
};

class Folder {
 public:
  explicit Folder(graph::Graph& graph) : g_(graph), shapes_(graph) {}

  // The fold of the affine node at `a`, nullopt when no layer is behind it, or why it may not.
  std::variant<std::monostate, Fold, std::string> plan(std::size_t a) {
    const graph::Node& an = g_.nodes()[a];
    const std::string v = data_operand(g_, an);
    if (v.empty()) return std::monostate{};
    const auto chain = find_chain(g_, an, v);
    if (!chain) return std::monostate{};
    const graph::Node& layer = g_.nodes()[chain->layer];
    head_ = describe(layer);
    if (is_op(layer, "Conv")) return plan_conv(*chain, a);
    if (is_op(layer, "ConvTranspose")) return plan_conv_transpose(*chain, a);
    return plan_matrix_product(*chain, a);
  }
  const std::string& head() const { return head_; }

 private:
  // Every value of the chain read by the next node alone (the layer's output also by shapes-only
  // ops where `shape_readers`: the rewrite keeps that value).
  std::string uses_problem(const Chain& c, std::size_t a, bool shape_readers) const {
    std::vector<std::size_t> order = {c.layer};
    if (c.bias) order.push_back(*c.bias);
    order.insert(order.end(), c.reshapes.begin(), c.reshapes.end());
    order.push_back(a);
    for (std::size_t k = 0; k + 1 < order.size(); ++k) {
      const graph::Node& n = g_.nodes()[order[k]];
      if (n.outputs.size() != 1)
        return fmt::format("{} has {} outputs", describe(n), n.outputs.size());
      if (std::string why = use_problem(g_, n.outputs[0], order[k + 1], shape_readers && k == 0);
          !why.empty())
        return why;
    }
    return {};
  }

  std::variant<std::monostate, Fold, std::string> plan_conv(const Chain& c, std::size_t b) {
    const graph::Node& conv = g_.nodes()[c.layer];
    const graph::Node& bn = g_.nodes()[b];
    if (std::string why = detail::conv_problem(g_, conv); !why.empty()) return why;
    if (std::string why = detail::batch_norm_problem(g_, bn); !why.empty()) return why;
    if (std::string why = detail::single_use_problem(g_, conv.outputs[0], b); !why.empty())
      return "the conv output " + why;
    const auto module = detail::conv_module(conv);
    reparam::ConvKernel folded;
    try {
      folded = reparam::fold_batch_norm(reparam::kernel_of(*module),
                                        reparam::params_of(*detail::batch_norm_module(bn)));
    } catch (const Error& e) {
      return e.message();
    }
    return conv_fold(c, b, folded.weight, folded.bias, module->weight().suggest_memory_format());
  }

  std::variant<std::monostate, Fold, std::string> plan_conv_transpose(const Chain& c,
                                                                      std::size_t a) {
    const graph::Node& conv = g_.nodes()[c.layer];
    if (std::string why = detail::conv_problem(g_, conv); !why.empty()) return why;
    if (std::string why = uses_problem(c, a, false); !why.empty()) return "the conv output " + why;
    const auto module = detail::conv_transpose_module(conv);
    auto affine = detail::axis_affine(g_, g_.nodes()[a], 3, 4);  // channels of NCHW
    if (auto* why = std::get_if<std::string>(&affine)) return *why;
    reparam::ConvTransposeKernel folded;
    try {
      folded = reparam::fold_affine_into_conv_transpose(
          reparam::kernel_of(*module), std::get<detail::AxisAffine>(affine).affine);
    } catch (const Error& e) {
      return e.message();
    }
    return conv_fold(c, a, folded.weight, folded.bias, module->weight().suggest_memory_format());
  }

  // Conv or ConvTranspose: the layer with the folded weight and bias (in the weight's format)
  // in place of both nodes; its module is made from that data.
  Fold conv_fold(const Chain& c, std::size_t a, const Tensor& weight, const Tensor& bias,
                 MemoryFormat format) {
    const graph::Node& conv = g_.nodes()[c.layer];
    const graph::Node& an = g_.nodes()[a];
    graph::Node fused;
    fused.name = conv.name;  // free once the conv is erased
    fused.op_type = conv.op_type;
    fused.attributes = conv.attributes;  // same geometry, so the same ONNX attributes
    fused.outputs = {an.outputs[0]};
    fused.origin = fmt::format("{} + {}", conv.name, an.name);
    fused.inputs = detail::add_parameter_constants(
        g_, conv.inputs[0], g_.unique_name(conv.name + "_bnfold"),
        detail::in_format(weight, format), detail::in_format(bias, format));
    Fold f;
    f.nodes.push_back(with_module(g_, std::move(fused)));
    f.erase = {c.layer, a};
    f.note = fmt::format("folded {} into {}", describe(an), describe(conv));
    return f;
  }

  std::variant<std::monostate, Fold, std::string> plan_matrix_product(const Chain& c,
                                                                      std::size_t a) {
    const graph::Node& layer = g_.nodes()[c.layer];
    const graph::Node& an = g_.nodes()[a];
    const bool gemm = is_op(layer, "Gemm");
    // The weight, the features' axis in it, and the bias as a Gemm's β·C or a MatMul's Add.
    // Only a BN is noted after a product of two values (attention's Mul and Add are not
    // candidates).
    const auto weight = layer.inputs.size() < 2 || detail::constant_value(g_, layer.inputs[0])
                            ? std::nullopt
                            : detail::constant_value(g_, layer.inputs[1]);
    if (!weight && !is_op(an, "BatchNormalization")) return std::monostate{};
    if (!weight || weight->dim() != 2 || weight->dtype() != DType::Float32)
      return fmt::format("{}: its weight '{}' is not a constant 2-d float32 matrix",
                         describe(layer), layer.inputs[1]);
    const bool trans_b = gemm && layer.attributes.get_int("transB", 0) == 1;
    reparam::LinearKernel kernel{*weight, {}, trans_b ? 0 : 1};
    const std::int64_t features = weight->size(kernel.feature_axis);
    std::optional<std::vector<double>> bias;
    if (gemm && layer.inputs.size() > 2 && !layer.inputs[2].empty()) {
      const auto cv = detail::constant_value(g_, layer.inputs[2]);
      bias = cv ? detail::axis_values(*cv, 1, 2) : std::nullopt;
      if (!bias)
        return fmt::format("{}: C '{}' is not a per-feature constant", describe(layer),
                           layer.inputs[2]);
      for (double& e : *bias) e *= layer.attributes.get_float("beta", 1.0f);
    }
    // The rank of each value along the chain, so that an axis or a broadcast can be checked.
    std::optional<std::int64_t> rank =
        gemm ? std::optional<std::int64_t>(2) : detail::known_rank(g_, shapes_, layer.inputs[0]);
    if (c.bias) {
      const graph::Node& add = g_.nodes()[*c.bias];
      const std::string x = data_operand(g_, add);
      const auto t = detail::constant_value(g_, add.inputs[add.inputs[0] == x ? 1 : 0]);
      bias = detail::axis_values(*t, 1, rank.value_or(1));
      if (!bias) return fmt::format("{}: its constant is not one value per feature", describe(add));
    }
    // Where the features are: the last axis of the product, then wherever a Transpose puts it.
    std::int64_t from_end = 1;
    for (std::size_t r : c.reshapes) {
      const graph::Node& n = g_.nodes()[r];
      if (is_op(n, "Transpose")) {
        const auto moved = transposed_axis(n, from_end, rank);
        if (!moved) return fmt::format("{}: where it moves the features is not known", describe(n));
        from_end = *moved;
        continue;
      }
      rank = from_end == 1 ? keeps_features(n, features, rank) : std::nullopt;
      if (!rank)
        return fmt::format("{} may move the features ({} values, axis {} from the end)",
                           describe(n), features, from_end);
    }
    // The layer's output survives the rewrite (a Shape may read it) when Reshapes follow it.
    if (std::string why = uses_problem(c, a, !c.bias && !c.reshapes.empty()); !why.empty())
      return why;
    if (!rank && is_op(an, "BatchNormalization"))
      return fmt::format("the rank of '{}' is not known, so neither is the axis {} normalizes",
                         data_operand(g_, an), describe(an));
    auto read = detail::axis_affine(g_, an, from_end, rank.value_or(1));
    if (auto* why = std::get_if<std::string>(&read)) return *why;
    const reparam::ChannelAffine& affine = std::get<detail::AxisAffine>(read).affine;
    const bool scales =
        std::any_of(affine.scale.begin(), affine.scale.end(), [](double s) { return s != 1.0; });
    if (!gemm && !c.bias && !scales) return std::monostate{};  // a MatMul's bias Add: no gain
    if (bias) kernel.bias = per_feature_tensor(*bias, features);
    reparam::LinearKernel folded;
    try {
      folded = reparam::fold_affine_into_linear(kernel, affine);
    } catch (const Error& e) {
      return e.message();
    }
    return matrix_fold(c, a, folded);
  }

  // The features' axis (counted from the end) after Transpose `n` of a value of rank `rank`
  // whose features are `from_end` from its end: output axis i is input axis perm[i].
  static std::optional<std::int64_t> transposed_axis(const graph::Node& n, std::int64_t from_end,
                                                     std::optional<std::int64_t> rank) {
    if (!rank) return std::nullopt;
    std::vector<std::int64_t> perm = n.attributes.get_ints("perm");
    if (!n.attributes.has("perm"))
      for (std::int64_t i = *rank; i-- > 0;) perm.push_back(i);  // no perm: reversed
    if (static_cast<std::int64_t>(perm.size()) != *rank) return std::nullopt;
    const auto at = std::find(perm.begin(), perm.end(), *rank - from_end);
    if (at == perm.end()) return std::nullopt;
    return *rank - (at - perm.begin());
  }

  // The rank after a Reshape or Flatten `n` whose input has `features` values on its last axis
  // and rank `rank`, when its output keeps them there; else nullopt.
  std::optional<std::int64_t> keeps_features(const graph::Node& n, std::int64_t features,
                                             std::optional<std::int64_t> rank) {
    if (const auto s = shapes_.shape(n.outputs.at(0)))
      return !s->empty() && s->back() == features ? std::optional<std::int64_t>(s->size())
                                                  : std::nullopt;
    if (is_op(n, "Reshape") && n.inputs.size() == 2) {
      const auto shape = detail::constant_value(g_, n.inputs[1]);
      if (!shape || shape->dim() != 1 || shape->numel() == 0) return std::nullopt;
      const std::vector<float> dims = shape->to_vector();
      if (dims.back() != static_cast<float>(features)) return std::nullopt;
      return shape->numel();
    }
    if (is_op(n, "Flatten") && rank) {  // [prod(dims < axis), prod(dims ≥ axis)]
      std::int64_t axis = n.attributes.get_int("axis", 1);
      if (axis < 0) axis += *rank;
      return axis == *rank - 1 ? std::optional<std::int64_t>(2) : std::nullopt;
    }
    return std::nullopt;
  }

  static Tensor per_feature_tensor(const std::vector<double>& v, std::int64_t features) {
    std::vector<float> f(static_cast<std::size_t>(features));
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = static_cast<float>(v[v.size() == 1 ? 0 : i]);
    return from_values(f, {features});
  }

  // The folded Gemm or MatMul (and a MatMul's bias Add), then the chain's Reshapes, the last
  // writing the affine node's output.
  Fold matrix_fold(const Chain& c, std::size_t a, const reparam::LinearKernel& folded) {
    const graph::Node& layer = g_.nodes()[c.layer];
    const graph::Node& an = g_.nodes()[a];
    const bool gemm = is_op(layer, "Gemm");
    const std::vector<float> b = folded.bias.to_vector();
    const bool add =
        !gemm && (c.bias || std::any_of(b.begin(), b.end(), [](float e) { return e != 0.0f; }));
    const std::string base = g_.unique_name(layer.name + "_bnfold");
    Fold f;
    graph::Node product;
    product.name = layer.name;
    product.op_type = layer.op_type;
    product.attributes = layer.attributes;
    if (gemm) product.attributes.set("beta", 1.0f);  // C' is β·C·a + t
    product.inputs = detail::add_parameter_constants(g_, layer.inputs[0], base, folded.weight,
                                                     gemm ? folded.bias : Tensor());
    product.origin = fmt::format("{} + {}", layer.name, an.name);
    f.nodes.push_back(std::move(product));
    if (add) {
      graph::Node bias;
      bias.name = c.bias ? g_.nodes()[*c.bias].name : an.name;
      bias.op_type = "Add";
      const std::string constant = g_.unique_name(base + ".bias");
      g_.set_constant(constant, folded.bias);
      bias.inputs = {"", constant};
      bias.origin = f.nodes[0].origin;
      f.nodes.push_back(std::move(bias));
    }
    for (std::size_t r : c.reshapes) f.nodes.push_back(g_.nodes()[r]);
    // Wire them: each reads the one before; the layer's group (the product and its Add) writes
    // the value the first Reshape read, the last node the affine node's output.
    const std::size_t group = add ? 2 : 1;
    for (std::size_t k = 0; k < f.nodes.size(); ++k) {
      graph::Node& n = f.nodes[k];
      if (k > 0) n.inputs[0] = f.nodes[k - 1].outputs[0];
      if (k + 1 == f.nodes.size()) {
        n.outputs = {an.outputs[0]};
      } else if (k + 1 == group) {
        n.outputs = {c.bias ? g_.nodes()[*c.bias].outputs[0] : layer.outputs[0]};
      } else if (k < group) {
        n.outputs = {g_.unique_name(layer.outputs[0] + "_scaled")};
      }  // a Reshape that is not last keeps its output
    }
    for (std::size_t k = 0; k < group; ++k) f.nodes[k] = with_module(g_, std::move(f.nodes[k]));
    f.erase = {c.layer, a};
    if (c.bias) f.erase.push_back(*c.bias);
    f.erase.insert(f.erase.end(), c.reshapes.begin(), c.reshapes.end());
    f.note = fmt::format("folded {} into {}{}", describe(an), describe(layer),
                         add && !c.bias ? " and an Add of its shift" : "");
    return f;
  }

  graph::Graph& g_;
  detail::StaticShapes shapes_;  // folding keeps every value's shape
  std::string head_;
};

}  // namespace

PassReport fold_batch_norms(graph::Graph& graph) {
  PassReport report{"bn-folding", false, {}};
  Folder folder(graph);
  std::set<std::string> noted;  // a fold moves nodes back; a declined node is noted once
  for (std::size_t a = 0; a < graph.nodes().size(); ++a) {
    auto plan = folder.plan(a);
    if (std::holds_alternative<std::monostate>(plan)) continue;
    const graph::Node& an = graph.nodes()[a];
    const std::string pair = fmt::format("{} into {}", describe(an), folder.head());
    if (auto* why = std::get_if<std::string>(&plan)) {
      if (noted.insert(an.name).second)
        report.notes.push_back(fmt::format("kept {}: {}", pair, *why));
      continue;
    }
    Fold& f = std::get<Fold>(plan);
    report.notes.push_back(f.note);
    // The folded nodes take the layer's place: what they read is written before it, and every
    // reader of what they write comes after it (a Shape of the layer's output may sit between).
    a = detail::replace_nodes_at_first(graph, f.erase, std::move(f.nodes));
    report.changed = true;
  }
  graph.verify();
  return report;
}

}  // namespace refold::passes
