// activation-fusion: the elementwise chain after a conv — its activation, a residual Add, a
// Mul/Add by constants — runs inside the conv's primitive (oneDNN post-ops, refold's native
// epilogue; refold/post_ops.h), so the conv output is written once instead of written, read and
// written again per op.
//
// The chain (c = the conv's output; every intermediate value has exactly the consumers shown
// and is not a graph output, so removing it loses nothing — docs/reliability.md F22) is taken
// node by node while the next node is one of
//   an activation     Relu, Clip(0, 6) / Clip(0, +inf), LeakyRelu(alpha), Sigmoid, HardSwish,
//                     HardSigmoid(1/6, 0.5) (PyTorch's constants; ONNX's default alpha is 0.2),
//                     Mul(v, Sigmoid(v)) = SiLU (v read by exactly the two nodes)
//   an affine map     Mul/Add/Sub/Div by a constant per tensor or per output channel ([C],
//                     [C, 1, 1], [1, C, 1, 1], …), Neg, an inference BatchNormalization:
//                     y = v·scale + shift (detail::axis_affine; Div as ·1/c)
//   the residual      Add(v, r) with r computed at run time, once per chain: before the first
//                     activation (relu(conv + r), ResNet) or after it (x + silu(conv), YOLO)
// and becomes PostOps: the head act(c + b [+ r]), then steps act(v·scale + shift [+ r]), a new
// step wherever the order scale, shift, residual, activation would otherwise go back. A Mul or
// Add by a constant right after the conv is normally folded into its weights before this pass
// (reparameterize); one left there is a step.
// An activation after an op that only moves data (conv → reshape → act) first moves before it,
// next to the conv (hoist_activation_at, below); before that, a run of reshapes that gives a
// value its own shape back goes (drop_identity_reshapes_at), so the chain continues through it.
// The conv is a plain nn::Conv2d (constant weights; ConvTranspose2d has no fused post-ops)
// with no post-ops yet. A linear product (MatMul by a constant matrix, a Gemm that is a Linear)
// takes its bias Add, a residual Add and an activation the same way (LinearChain, below).
//
// Apply: one node named as the conv (its weights keep their names), op_type "Conv", writing
// the last part's output (the surviving output name), inputs = the conv's inputs, or
// [x, W, B or "", r or "", the steps' constants…] when the chain has a residual or constants,
// parts = the replaced nodes in order (the exporter writes them back as standard ONNX), placed
// where the last part was (every input is defined there). Module: made from the parts alone
// (fused_module, below, replays them through the same chain_take): the conv's Conv2d with the
// chain as its post-ops, or FusedConvAdd around it when there is a residual.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/check.h"
#include "ops/op.h"
#include "ops/view_op.h"
#include "passes/branch_nodes.h"
#include "passes/fused_chain.h"
#include "passes/fused_conv.h"
#include "passes/fused_linear.h"
#include "passes/known_values.h"
#include "passes/node_module.h"
#include "passes/passes.h"
#include "refold/nn/conv.h"
#include "refold/nn/linear.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;
using detail::is_reshape;
using detail::origin_of;
using detail::replace_with_fused;
using detail::sole_reader;

// The activation that reads `value`, found from its consumers.
struct ActivationMatch {
  Activation activation = Activation::None;
  double negative_slope = 0.01;
  std::vector<std::size_t> nodes;  // the activation's nodes, in graph order
  std::string output;              // the value the activation writes
  std::string problem;             // non-empty: a candidate that cannot fuse, and why
};

// The op's post-op reader (src/ops/op.h), or null when the node is not an activation. A node
// this pass fused is named after its first part and is not that op (an ElementwiseChain
// Relu + Mul is no Relu); one canonicalize fused is the op it names (a Gelu from its five
// nodes) and is an activation.
ops::ActivationReader activation_reader(const graph::Node& node) {
  if (!node.parts.empty() && node.parts[0].op_type == node.op_type) return nullptr;
  const ops::OpDef* def = ops::find_op(node);
  return def != nullptr ? def->as_activation : nullptr;
}

// Sets m.activation from the single activation node `n`; m.problem when it cannot fuse.
void match_single(const graph::Graph& graph, const graph::Node& n, ActivationMatch& m) {
  if (n.outputs.size() != 1 || n.outputs[0].empty()) {
    m.problem = fmt::format("{} has {} outputs", describe(n), n.outputs.size());
    return;
  }
  m.output = n.outputs[0];
  std::string problem;
  if (const auto act = activation_reader(n)(graph, n, problem)) {
    m.activation = act->activation;
    m.negative_slope = act->negative_slope;
  } else {
    m.problem = fmt::format("{}: {}", describe(n), problem);
  }
}

// Mul(v, s) or Mul(s, v): the Mul of SiLU's pair, v·Sigmoid(v) with s = Sigmoid(v).
bool is_silu_mul(const graph::Node& n, const std::string& v, const std::string& s) {
  return is_op(n, "Mul") && n.inputs.size() == 2 && n.outputs.size() == 1 &&
         ((n.inputs[0] == v && n.inputs[1] == s) || (n.inputs[0] == s && n.inputs[1] == v));
}

// In a fused node's parts: parts[k], parts[k + 1] are SiLU's Sigmoid + Mul pair reading `value`
// (how the replays below recognise what match_activation took as one activation).
bool silu_parts_at(const std::vector<graph::Node>& parts, std::size_t k, const std::string& value) {
  const graph::Node& n = parts[k];
  return is_op(n, "Sigmoid") && n.inputs.size() == 1 && n.inputs[0] == value &&
         n.outputs.size() == 1 && k + 1 < parts.size() &&
         is_silu_mul(parts[k + 1], value, n.outputs[0]);
}

// The activation applied to `value`, if one reads it (nullopt: nothing to fuse, no note).
std::optional<ActivationMatch> match_activation(const graph::Graph& graph,
                                                const std::string& value) {
  const std::vector<std::size_t> readers = graph.consumers(value);
  ActivationMatch m;
  if (readers.size() == 2) {
    // SiLU: Mul(value, Sigmoid(value)), operands in either order.
    const graph::Node& a = graph.nodes()[readers[0]];
    const graph::Node& b = graph.nodes()[readers[1]];
    if (!is_op(a, "Sigmoid") || !a.parts.empty() || !b.parts.empty() || a.inputs.size() != 1 ||
        a.outputs.size() != 1 || !is_silu_mul(b, value, a.outputs[0])) {
      return std::nullopt;
    }
    const std::string& s = a.outputs[0];
    m.nodes = {readers[0], readers[1]};
    m.output = b.outputs[0];
    if (graph.is_graph_output(s) || graph.consumers(s).size() != 1) {
      m.problem = fmt::format("the sigmoid '{}' of the SiLU is also used elsewhere", s);
    } else {
      m.activation = Activation::SiLU;
    }
    return m;
  }
  if (readers.size() != 1) return std::nullopt;
  const graph::Node& n = graph.nodes()[readers[0]];
  if (activation_reader(n) == nullptr) return std::nullopt;
  if (n.inputs.empty() || n.inputs[0] != value) return std::nullopt;
  m.nodes = {readers[0]};
  match_single(graph, n, m);
  return m;
}

// What the conv's node and the nodes after it compute, as the conv's post-op chain.
struct PostChain {
  std::vector<std::size_t> parts;      // the conv's node, then each node taken, in graph order
  std::string out;                     // the value the last part writes
  PostOps post;                        // without the residual tensor (a run-time value)
  std::string residual;                // the Add's other operand, or "" when none
  bool conv_first = true;              // Add(chain, r) rather than Add(r, chain)
  std::vector<std::string> constants;  // the steps' constant operands (listed as node inputs)
};

// The chain's parts in the order refold/post_ops.h applies them: the head's residual and
// activation, then per step scale, shift, residual, activation. A new part that comes no later
// than what the last step (or the head) already has starts a new step.
enum class ChainField { Scale, Shift, Residual, Activation };

bool chain_at_head(const PostChain& c) { return c.post.then.empty(); }

// The step a part of kind `f` goes into, or null for the head.
PostStep* chain_step_for(PostChain& c, ChainField f) {
  if (chain_at_head(c)) {
    const bool head_has_room =
        (f == ChainField::Residual && c.residual.empty() &&
         c.post.activation == Activation::None) ||
        (f == ChainField::Activation && c.post.activation == Activation::None);
    if (head_has_room) return nullptr;
  } else {
    const PostStep& last = c.post.then.back();
    const ChainField latest = last.activation != Activation::None ? ChainField::Activation
                              : last.add_residual                 ? ChainField::Residual
                              : !last.shift.empty()               ? ChainField::Shift
                                                                  : ChainField::Scale;
    const bool empty = last.scale.empty() && last.shift.empty() && !last.add_residual &&
                       last.activation == Activation::None;
    if (empty || latest < f) return &c.post.then.back();
  }
  c.post.then.emplace_back();
  return &c.post.then.back();
}

void chain_add_activation(PostChain& c, Activation activation, double negative_slope) {
  if (PostStep* step = chain_step_for(c, ChainField::Activation)) {
    step->activation = activation;
    step->negative_slope = negative_slope;
  } else {
    c.post.activation = activation;
    c.post.negative_slope = negative_slope;
  }
}

std::vector<float> affine_floats(const std::vector<double>& values, double identity) {
  if (std::all_of(values.begin(), values.end(), [&](double v) { return v == identity; })) return {};
  return {values.begin(), values.end()};
}

bool is_binary_arithmetic(const graph::Node& n) {
  return is_op(n, "Add") || is_op(n, "Sub") || is_op(n, "Mul") || is_op(n, "Div");
}

// The ops detail::axis_affine maps to y = x·scale + shift.
bool is_affine_op(const graph::Node& n) {
  return is_binary_arithmetic(n) || is_op(n, "Neg") || is_op(n, "BatchNormalization");
}

// What a fused node's chain computes, for its note: "sum+relu+mul[1]+add[1]", "silu+sum", …
std::string chain_text(const PostChain& c) {
  const bool head_sum = !c.residual.empty() && !c.post.residual_in_steps();
  if (c.post.empty()) return head_sum ? "sum" : "none";
  return head_sum ? "sum+" + c.post.description() : c.post.description();
}

// Takes the activation node `n` (it reads c.out) into the chain: "" when taken, else why not.
std::string chain_take_activation(const graph::Graph& graph, PostChain& c, const graph::Node& n) {
  ActivationMatch m;
  match_single(graph, n, m);
  if (!m.problem.empty()) return m.problem;
  chain_add_activation(c, m.activation, m.negative_slope);
  c.out = m.output;
  return {};
}

// Takes node `n`, which reads c.out, into the chain when the conv can apply it (see
// chain_take_next) and returns true; the caller lists it in c.parts. False with `why` set when
// it is a candidate that cannot join. `channels` ≤ 0: not known, not checked.
bool chain_take_node(const graph::Graph& graph, std::int64_t channels, PostChain& c,
                     const graph::Node& n, std::string& why) {
  if (!n.parts.empty() || n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  if (activation_reader(n) != nullptr) {
    if (n.inputs.empty() || n.inputs[0] != c.out) return false;
    why = chain_take_activation(graph, c, n);
    return why.empty();
  }
  if (is_op(n, "Add") && n.inputs.size() == 2 && n.inputs[0] != n.inputs[1]) {
    const bool first = n.inputs[0] == c.out;
    const std::string& r = first ? n.inputs[1] : n.inputs[0];
    if (!r.empty() && !graph.is_constant(r)) {
      if (!c.residual.empty()) {
        why = fmt::format("{} adds a second residual", describe(n));
        return false;
      }
      if (PostStep* step = chain_step_for(c, ChainField::Residual)) step->add_residual = true;
      c.residual = r;
      c.conv_first = first;
      c.out = n.outputs[0];
      return true;
    }
  }
  if (!is_affine_op(n)) return false;
  auto affine = detail::axis_affine(graph, n, 3, 4);
  if (auto* problem = std::get_if<std::string>(&affine)) {
    why = *problem;
    return false;
  }
  const detail::AxisAffine& a = std::get<detail::AxisAffine>(affine);
  if (a.operand != c.out) return false;
  for (const auto* v : {&a.affine.scale, &a.affine.shift}) {
    if (v->size() != 1 && channels > 0 && static_cast<std::int64_t>(v->size()) != channels) {
      why = fmt::format("{} has {} values for {} channels", describe(n), v->size(), channels);
      return false;
    }
  }
  std::vector<float> scale = affine_floats(a.affine.scale, 1.0);
  std::vector<float> shift = affine_floats(a.affine.shift, 0.0);
  // Never the head (it has no scale or shift), so always a step.
  PostStep* step = chain_step_for(c, scale.empty() ? ChainField::Shift : ChainField::Scale);
  if (!scale.empty()) step->scale = std::move(scale);
  if (!shift.empty()) step->shift = std::move(shift);
  for (const std::string& name : n.inputs) {
    if (name != c.out && !name.empty() && graph.is_constant(name)) c.constants.push_back(name);
  }
  c.out = n.outputs[0];
  return true;
}

// chain_take_node for the graph's node `reader`, listed in c.parts when taken.
bool chain_take(const graph::Graph& graph, std::int64_t channels, PostChain& c, std::size_t reader,
                std::string& why) {
  if (!chain_take_node(graph, channels, c, graph.nodes()[reader], why)) return false;
  c.parts.push_back(reader);
  return true;
}

// Takes the one node that reads c.out when the conv can apply it: an activation (SiLU's
// Sigmoid + Mul pair too), a Mul/Add/Sub/Div by a constant per tensor or per output channel,
// a Neg or an inference BatchNormalization (detail::axis_affine over the channels of the 4-d
// output), or, while the chain has none, an Add of a computed value (the residual). Returns
// false when there is nothing (more) to take; `why` then says why a candidate was not taken.
bool chain_take_next(const graph::Graph& graph, std::int64_t channels, PostChain& c,
                     std::string& why) {
  if (graph.is_graph_output(c.out)) return false;
  if (auto m = match_activation(graph, c.out)) {
    if (!m->problem.empty()) {
      why = m->problem;
      return false;
    }
    chain_add_activation(c, m->activation, m->negative_slope);
    c.parts.insert(c.parts.end(), m->nodes.begin(), m->nodes.end());
    c.out = m->output;
    return true;
  }
  const std::vector<std::size_t> readers = graph.consumers(c.out);
  if (readers.size() > 1 && c.parts.size() == 1) {
    why = fmt::format("its output '{}' has {} readers; a fused post-op needs it to have one", c.out,
                      readers.size());
  }
  if (readers.size() != 1) return false;
  return chain_take(graph, channels, c, readers[0], why);
}

// Tries the patterns at the conv node `index`. Returns true when it fused (the graph changed).
bool fuse_at(graph::Graph& graph, std::size_t index, PassReport& report) {
  const graph::Node& conv_node = graph.nodes()[index];
  const bool is_conv = is_op(conv_node, "Conv");
  auto conv = std::dynamic_pointer_cast<nn::Conv2d>(conv_node.module);
  if (!is_conv || conv_node.outputs.size() != 1 || !conv_node.parts.empty()) return false;
  const std::string& c = conv_node.outputs[0];
  const std::vector<std::size_t> readers = graph.consumers(c);
  // Is there a candidate at all? (Only candidates get a note when declined.)
  bool candidate = false;
  for (std::size_t r : readers) {
    const graph::Node& n = graph.nodes()[r];
    candidate = candidate || activation_reader(n) != nullptr || is_binary_arithmetic(n);
  }
  if (!candidate) return false;
  auto decline = [&](const std::string& why) {
    report.notes.push_back(fmt::format("kept {}: {}", describe(conv_node), why));
    return false;
  };
  if (!conv) return decline("its weights are not constants held by an nn::Conv2d");
  if (!conv->post_ops().empty()) return false;  // fused already
  // set_post_ops changes the module: a module that also runs another node (a weight-tied
  // net built in C++) would change that node too.
  for (std::size_t j = 0; j < graph.nodes().size(); ++j) {
    if (j != index && graph.nodes()[j].module == conv_node.module) {
      return decline(fmt::format("its module also runs {}", describe(graph.nodes()[j])));
    }
  }
  if (graph.is_graph_output(c)) return decline(fmt::format("its output '{}' is a graph output", c));

  PostChain chain;
  chain.parts = {index};
  chain.out = c;
  std::string why;
  while (chain_take_next(graph, conv->options().out_channels(), chain, why)) {
  }
  if (chain.parts.size() == 1) return why.empty() ? false : decline(why);
  if (!why.empty())
    report.notes.push_back(
        fmt::format("{}: the chain stops before {}: {}", describe(conv_node), chain.out, why));

  graph::Node fused;
  fused.name = conv_node.name;
  fused.op_type = "Conv";
  fused.attributes = conv_node.attributes;
  fused.inputs = conv_node.inputs;
  const bool residual = !chain.residual.empty();
  if (residual || !chain.constants.empty()) {
    fused.inputs.resize(3);  // x, W, B ("" when absent)
    fused.inputs.push_back(chain.residual);
    fused.inputs.insert(fused.inputs.end(), chain.constants.begin(), chain.constants.end());
  }
  fused.outputs = {chain.out};
  fused.origin = origin_of(graph, chain.parts);
  const std::string note = fmt::format("fused {} into {} ({}: {})", describe(conv_node),
                                       fused.origin, chain.out, chain_text(chain));
  replace_with_fused(graph, chain.parts, std::move(fused));  // its module: fused_module
  report.notes.push_back(note);
  return true;
}

// The plain Concat along the channels of a 4-d value that writes `x`, when node `reader` alone
// reads x.
std::optional<std::size_t> chain_concat(const graph::Graph& graph, const std::string& x,
                                        std::size_t reader) {
  const auto producer = graph.producer(x);
  if (!producer) return std::nullopt;
  const graph::Node& n = graph.nodes()[*producer];
  if (!is_op(n, "Concat") || !n.parts.empty() || n.outputs.size() != 1 || n.inputs.empty())
    return std::nullopt;
  const std::int64_t axis = n.attributes.get_int("axis", 1);
  if (axis != 1 && axis != -3) return std::nullopt;
  for (const std::string& in : n.inputs) {
    if (in.empty() || graph.is_constant(in)) return std::nullopt;
  }
  if (!detail::single_use_problem(graph, x, reader).empty()) return std::nullopt;
  return producer;
}

// A chain that does not start at a conv: node `index` and the elementwise nodes after it, at
// least two, over a 4-d float32 value of known sizes — run as one ElementwiseChain node.
bool fuse_chain_at(graph::Graph& graph, std::size_t index, detail::StaticShapes& shapes,
                   PassReport& report) {
  const graph::Node& first = graph.nodes()[index];
  if (!first.parts.empty() || first.inputs.empty() || first.outputs.size() != 1) return false;
  const bool binary = is_binary_arithmetic(first);
  if (activation_reader(first) == nullptr && !is_affine_op(first)) return false;
  // The chain's input: the operand that is not a constant. An Add of two computed values of
  // one shape (HRNet's and an FPN's branch sums, before their Relu) heads a chain too: its
  // first operand is the input, its second the residual.
  std::string x = first.inputs[0];
  if (binary) {
    if (first.inputs.size() != 2) return false;
    const bool c0 = graph.is_constant(first.inputs[0]), c1 = graph.is_constant(first.inputs[1]);
    if (c0 && c1) return false;
    if (!c0 && !c1) {
      const auto s0 = shapes.shape(first.inputs[0]), s1 = shapes.shape(first.inputs[1]);
      if (!is_op(first, "Add") || first.inputs[0] == first.inputs[1] || !s0 || s0 != s1)
        return false;
    } else {
      x = c0 ? first.inputs[1] : first.inputs[0];
    }
  }
  if (x.empty() || graph.is_constant(x)) return false;
  const auto shape = shapes.shape(x);
  const auto dtype = shapes.dtype(x);
  if (!shape || shape->size() != 4 || dtype != DType::Float32) return false;
  PostChain chain;
  chain.out = x;
  std::string why;
  if (!chain_take(graph, (*shape)[1], chain, index, why)) return false;
  while (chain_take_next(graph, (*shape)[1], chain, why)) {
  }
  // A channel Concat whose only reader is the chain joins it: the concat writes the chain's
  // values (ConcatChain), one pass instead of two.
  std::optional<std::size_t> concat = chain_concat(graph, x, index);
  if (!chain.residual.empty()) concat.reset();  // ConcatChain takes no residual
  if (concat) chain.parts.push_back(*concat);
  if (chain.parts.size() < 2) return false;  // one node is one pass already

  graph::Node fused;
  fused.name = graph.nodes()[chain.parts.back()].name;
  if (concat) {
    fused.op_type = "Concat";
    fused.inputs = graph.nodes()[*concat].inputs;
  } else {
    fused.op_type = first.op_type;
    fused.inputs = {x, chain.residual};
  }
  fused.inputs.insert(fused.inputs.end(), chain.constants.begin(), chain.constants.end());
  fused.outputs = {chain.out};
  fused.origin = origin_of(graph, chain.parts);
  report.notes.push_back(fmt::format("fused {} into one pass over memory ({}: {})", fused.origin,
                                     chain.out, chain_text(chain)));
  replace_with_fused(graph, chain.parts, std::move(fused));
  return true;
}

// ---------------------------------------------------------------------------------------------
// Linear products: MatMul(x, W) of a computed x by a constant float32 W [K, N], or a Gemm run
// by nn::Linear, and the nodes after it that oneDNN's matmul applies before it writes:
//   the bias       Add of a constant per feature (1 or N values on the last axis, not enlarging
//                  the product: [N], [1, 1, N], …) while the product has none — PyTorch exports
//                  a Linear on a 3-d input as MatMul + Add
//   the residual   Add of a computed value, once: a transformer's x + proj(y)
//   an activation  as for a conv (GELU, SiLU's pair, …); it ends the chain
// taken in that order while each value has one reader and is not a graph output. The node
// becomes one op_type MatMul (or Gemm) node named as the product, inputs [x, W, B, r] (B: the
// Gemm's C or the bias Add's constant, "" when none; r only with a residual), parts = the
// replaced nodes. Module: the nn::Linear with the bias and activation, or FusedLinearAdd
// around it when there is a residual.
struct LinearChain {
  std::vector<std::size_t> parts;  // the product's node, then each node taken, in graph order
  std::string out;                 // the value the last part writes
  std::int64_t features = 0;       // N
  bool has_bias = false;           // the product's own (Gemm's C) or the Add's
  std::string bias_constant;       // the bias Add's constant, "" when none was taken
  std::vector<double> bias;        // its 1 or N values
  std::string residual;            // the residual Add's other operand, "" when none
  bool linear_first = true;        // Add(product, r) rather than Add(r, product)
  Activation activation = Activation::None;
  double negative_slope = 0.01;
};

// The chain's head when node `n` is a linear product (see above), else nullopt.
std::optional<LinearChain> linear_head(const graph::Graph& graph, const graph::Node& n) {
  if (!n.parts.empty() || n.outputs.size() != 1 || n.outputs[0].empty() || n.inputs.empty())
    return std::nullopt;
  LinearChain c;
  c.out = n.outputs[0];
  if (is_op(n, "MatMul")) {
    if (n.inputs.size() != 2 || n.inputs[0].empty() || graph.is_constant(n.inputs[0]) ||
        !graph.is_constant(n.inputs[1]))
      return std::nullopt;
    const Tensor& w = graph.constant(n.inputs[1]);
    if (w.dim() != 2 || w.dtype() != DType::Float32 || w.numel() == 0) return std::nullopt;
    c.features = w.size(1);
    return c;
  }
  if (!is_op(n, "Gemm")) return std::nullopt;
  auto linear = std::dynamic_pointer_cast<nn::Linear>(n.module);
  if (!linear || linear->activation() != Activation::None) return std::nullopt;
  c.features = linear->options().out_features();
  c.has_bias = linear->has_bias();
  return c;
}

// Takes node `n`, which reads c.out, into the chain when the product can apply it (the bias,
// the residual or an activation, see above). `rank`: the product's rank, for the bias's
// broadcast check (the replay passes a rank that allows any). False with `why` set when it is a
// candidate that cannot join.
bool linear_take_node(const graph::Graph& graph, std::int64_t rank, LinearChain& c,
                      const graph::Node& n, std::string& why) {
  if (n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  if (c.activation != Activation::None) return false;  // an activation ends the chain
  if (activation_reader(n) != nullptr) {  // a Gelu canonicalize fused from its nodes too
    if (n.inputs.empty() || n.inputs[0] != c.out) return false;
    ActivationMatch m;
    match_single(graph, n, m);
    if (!m.problem.empty()) {
      why = m.problem;
      return false;
    }
    c.activation = m.activation;
    c.negative_slope = m.negative_slope;
    c.out = m.output;
    return true;
  }
  if (!n.parts.empty() || !is_op(n, "Add") || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1])
    return false;
  const bool first = n.inputs[0] == c.out;
  const std::string& other = first ? n.inputs[1] : n.inputs[0];
  if (other.empty() || !c.residual.empty()) return false;
  if (!graph.is_constant(other)) {
    c.residual = other;
    c.linear_first = first;
  } else {
    if (c.has_bias) return false;
    const auto values = detail::axis_values(graph.constant(other), 1, rank);
    if (!values ||
        (values->size() != 1 && static_cast<std::int64_t>(values->size()) != c.features)) {
      why = fmt::format("{}: its constant is not one value per feature of the {} the product has",
                        describe(n), c.features);
      return false;
    }
    c.has_bias = true;
    c.bias_constant = other;
    c.bias = *values;
  }
  c.out = n.outputs[0];
  return true;
}

// Takes the one node (or SiLU's pair) that reads c.out when the product can apply it.
bool linear_take_next(const graph::Graph& graph, std::int64_t rank, LinearChain& c,
                      std::string& why) {
  if (graph.is_graph_output(c.out) || c.activation != Activation::None) return false;
  if (auto m = match_activation(graph, c.out)) {
    if (!m->problem.empty()) {
      why = m->problem;
      return false;
    }
    c.activation = m->activation;
    c.negative_slope = m->negative_slope;
    c.parts.insert(c.parts.end(), m->nodes.begin(), m->nodes.end());
    c.out = m->output;
    return true;
  }
  const std::vector<std::size_t> readers = graph.consumers(c.out);
  if (readers.size() != 1) return false;
  if (!linear_take_node(graph, rank, c, graph.nodes()[readers[0]], why)) return false;
  c.parts.push_back(readers[0]);
  return true;
}

// Tries the linear chain at node `index`. Returns true when it fused (the graph changed).
bool fuse_linear_at(graph::Graph& graph, std::size_t index, detail::StaticShapes& shapes,
                    PassReport& report) {
  const graph::Node& head = graph.nodes()[index];
  std::optional<LinearChain> chain = linear_head(graph, head);
  if (!chain) return false;
  // Without the product's rank only a bias of rank 1 (or a scalar) surely does not enlarge it.
  const auto shape = shapes.shape(chain->out);
  const std::int64_t rank = shape ? static_cast<std::int64_t>(shape->size()) : 1;
  chain->parts = {index};
  std::string why;
  while (linear_take_next(graph, rank, *chain, why)) {
  }
  if (chain->parts.size() == 1) {
    if (!why.empty()) report.notes.push_back(fmt::format("kept {}: {}", describe(head), why));
    return false;
  }
  graph::Node fused;
  fused.name = head.name;
  fused.op_type = head.op_type;
  fused.attributes = head.attributes;
  fused.inputs = head.inputs;
  if (!chain->bias_constant.empty()) {
    fused.inputs.resize(2);  // x, W (a Gemm that takes the Add's bias has no C)
    fused.inputs.push_back(chain->bias_constant);
  }
  if (!chain->residual.empty()) {
    fused.inputs.resize(3);
    fused.inputs.push_back(chain->residual);
  }
  fused.outputs = {chain->out};
  fused.origin = origin_of(graph, chain->parts);
  std::vector<std::string> what;
  if (!chain->bias_constant.empty()) what.emplace_back("bias");
  if (!chain->residual.empty()) what.emplace_back("sum");
  if (chain->activation != Activation::None) what.emplace_back(activation_name(chain->activation));
  report.notes.push_back(fmt::format("fused {} into {} ({}: {})", describe(head), fused.origin,
                                     chain->out, fmt::join(what, "+")));
  replace_with_fused(graph, chain->parts, std::move(fused));  // its module: fused_module
  return true;
}

// The module of a fused node whose first part is a linear product: its parts replayed through
// linear_take_node.
nn::ModulePtr fused_linear_module(const graph::Graph& graph, const graph::Node& node) {
  const std::vector<graph::Node>& parts = node.parts;
  const graph::Node& head = parts[0];
  std::optional<LinearChain> chain = linear_head(graph, head);
  REFOLD_CHECK(chain.has_value(), "{}: its part {} is not a product by a constant matrix",
               describe(node), describe(head));
  // Gemm: the module its data makes; MatMul(x, W): y = x·W = linear(x, Wᵀ).
  std::shared_ptr<nn::Linear> linear;
  if (is_op(head, "Gemm")) {
    linear = std::dynamic_pointer_cast<nn::Linear>(module_for(graph, head));
    REFOLD_CHECK(linear != nullptr, "{}: its Gemm part is not a linear layer", describe(node));
  }
  constexpr std::int64_t kAnyRank = 64;  // the pass checked the bias's rank against the product's
  for (std::size_t k = 1; k < parts.size(); ++k) {
    const graph::Node& n = parts[k];
    if (silu_parts_at(parts, k, chain->out)) {
      chain->activation = Activation::SiLU;
      chain->out = parts[++k].outputs[0];
      continue;
    }
    std::string why;
    REFOLD_CHECK(linear_take_node(graph, kAnyRank, *chain, n, why),
                 "{}: its part {} does not continue the chain after '{}'{}", describe(node),
                 describe(n), chain->out, why.empty() ? "" : ": " + why);
  }
  REFOLD_CHECK(chain->out == node.outputs[0], "{}: its parts end at '{}', not at its output '{}'",
               describe(node), chain->out, node.outputs[0]);
  const std::int64_t n_features = chain->features;
  // A new Linear where the bias comes from the Add (a Gemm's own, when it has one, stays).
  if (!linear || !chain->bias.empty()) {
    Tensor bias;
    if (!chain->bias.empty()) {
      bias = empty({n_features}, DType::Float32);
      float* b = bias.data<float>();
      for (std::int64_t i = 0; i < n_features; ++i)
        b[i] = static_cast<float>(chain->bias.size() == 1 ? chain->bias[0] : chain->bias[i]);
    }
    const Tensor weight =
        linear ? linear->weight() : graph.constant(head.inputs[1]).permute({1, 0});
    linear = std::make_shared<nn::Linear>(
        nn::LinearOptions(weight.size(1), n_features).bias(bias.defined()), weight, bias);
  }
  linear->set_activation(chain->activation, chain->negative_slope);
  if (chain->residual.empty()) return linear;
  return std::make_shared<FusedLinearAdd>(linear, chain->linear_first);
}

}  // namespace

nn::ModulePtr fused_module(const graph::Graph& graph, const graph::Node& node) {
  const std::vector<graph::Node>& parts = node.parts;
  REFOLD_CHECK(!parts.empty() && node.outputs.size() == 1 && !node.inputs.empty(),
               "{}: not a fused chain ({} parts, {} inputs, {} outputs)", describe(node),
               parts.size(), node.inputs.size(), node.outputs.size());
  if (linear_head(graph, parts[0])) return fused_linear_module(graph, node);
  // The head: the conv's own module (from its part's data), or the chain's input x.
  std::shared_ptr<nn::Conv2d> conv;
  PostChain chain;
  std::size_t k = 0;
  if (is_op(parts[0], "Conv")) {
    conv = std::dynamic_pointer_cast<nn::Conv2d>(module_for(graph, parts[0]));
    REFOLD_CHECK(conv != nullptr && conv->post_ops().empty() && parts[0].outputs.size() == 1,
                 "{}: its conv part is not a plain Conv with constant weights", describe(node));
    chain.out = parts[0].outputs[0];
    k = 1;
  } else if (is_op(parts[0], "Concat")) {
    chain.out = parts[0].outputs.at(0);
    k = 1;
  } else {
    chain.out = node.inputs[0];
  }
  const std::int64_t channels = conv ? conv->options().out_channels() : 0;
  for (; k < parts.size(); ++k) {
    const graph::Node& n = parts[k];
    if (silu_parts_at(parts, k, chain.out)) {
      chain_add_activation(chain, Activation::SiLU, 0.01);
      chain.out = parts[++k].outputs[0];
      continue;
    }
    if (activation_reader(n) != nullptr && !n.inputs.empty() && n.inputs[0] == chain.out) {
      // As match_activation takes it (a fused Gelu, with parts of its own, included).
      const std::string problem = chain_take_activation(graph, chain, n);
      REFOLD_CHECK(problem.empty(), "{}: {}", describe(node), problem);
      continue;
    }
    std::string why;
    REFOLD_CHECK(chain_take_node(graph, channels, chain, n, why),
                 "{}: its part {} does not continue the chain after '{}'{}", describe(node),
                 describe(n), chain.out, why.empty() ? "" : ": " + why);
  }
  REFOLD_CHECK(chain.out == node.outputs[0], "{}: its parts end at '{}', not at its output '{}'",
               describe(node), chain.out, node.outputs[0]);
  if (is_op(parts[0], "Concat")) {
    REFOLD_CHECK(chain.residual.empty(), "{}: a concat's chain with a residual", describe(node));
    return std::make_shared<ConcatChain>(parts[0].inputs.size(), chain.post);
  }
  if (!conv) return std::make_shared<ElementwiseChain>(chain.post, chain.conv_first);
  conv->set_post_ops(chain.post);
  if (chain.residual.empty()) return conv;
  return std::make_shared<FusedConvAdd>(conv, chain.conv_first);
}

// `from` renamed `to` wherever node reads or writes it, its parts included.
void rename_value(graph::Node& node, const std::string& from, const std::string& to) {
  for (auto* names : {&node.inputs, &node.outputs})
    std::replace(names->begin(), names->end(), from, to);
  for (graph::Node& part : node.parts) rename_value(part, from, to);
}

// An op that only moves data and keeps every element (a Transpose, a reshape, canonicalize's
// Rearrange; not a Slice or Split): an activation commutes with it.
bool keeps_every_element(const graph::Node& n) {
  if (dynamic_cast<const ops::ViewOp*>(n.module.get()) == nullptr) return false;
  return n.outputs.size() == 1 && !is_op(n, "Slice") && !is_op(n, "Split");
}

// conv → move → act, where `move` only moves data and keeps every element (keeps_every_element)
// and act is an activation (its other operands one-element constants: Clip's bounds), becomes
// conv → act → move: act(move(c)) = move(act(c)) element for element, so the result is
// bit-identical, and act is now next to the conv, whose post-op it becomes. PVT's and
// SegFormer's MixFFN (depthwise conv → tokens → GELU) and any activation written after a
// reshape. Each value keeps its one reader; act's output name moves to the move's output.
bool hoist_activation_at(graph::Graph& graph, std::size_t index, PassReport& report) {
  const graph::Node& act = graph.nodes()[index];
  if (activation_reader(act) == nullptr || act.inputs.empty() || act.outputs.size() != 1)
    return false;
  for (std::size_t k = 1; k < act.inputs.size(); ++k) {
    const std::string& in = act.inputs[k];
    if (!in.empty() && (!graph.is_constant(in) || graph.constant(in).numel() > 1)) return false;
  }
  const auto move_index = graph.producer(act.inputs[0]);
  if (!move_index) return false;
  const graph::Node& move = graph.nodes()[*move_index];
  if (!keeps_every_element(move) || sole_reader(graph, move.outputs[0]) != index) return false;
  const auto conv_index = graph.producer(move.inputs[0]);
  if (!conv_index) return false;
  const graph::Node& conv = graph.nodes()[*conv_index];
  if (!is_op(conv, "Conv") || !conv.parts.empty() || conv.outputs.size() != 1 ||
      sole_reader(graph, conv.outputs[0]) != *move_index)
    return false;

  // The new value between them; each node renamed in its parts too (export writes those).
  const std::string between = graph.unique_name(act.outputs[0] + "_before_" + move.name);
  graph::Node hoisted = act, moved = move;
  rename_value(hoisted, move.outputs[0], move.inputs[0]);
  rename_value(hoisted, act.outputs[0], between);
  rename_value(moved, move.inputs[0], between);
  rename_value(moved, move.outputs[0], act.outputs[0]);
  const std::string note = fmt::format("moved {} before {} (next to {}, to fuse with it)",
                                       describe(act), describe(move), describe(conv));
  const std::size_t at = *move_index;  // act's other operands are constants: defined there
  graph.erase_node(index);
  graph.erase_node(at);
  graph.insert_node(at, std::move(hoisted));
  graph.insert_node(at + 1, std::move(moved));
  report.notes.push_back(note);
  return true;
}

// A run of reshapes from node `index` (each value read by the next reshape alone and not a graph
// output) whose last output has the static shape of the run's input is the identity: the
// sequence in row-major order is never changed, and the shape is the same. Its readers read the
// input instead and the run goes, so a chain continues through it. LeViT's LinearNorm,
// MatMul → Flatten → BatchNormalization → Reshape back, leaves Flatten → Reshape between the
// product and its activation or residual Add once bn-folding has moved the BatchNorm into the
// product.
bool drop_identity_reshapes_at(graph::Graph& graph, std::size_t index, detail::StaticShapes& shapes,
                               PassReport& report) {
  if (!is_reshape(graph.nodes()[index])) return false;
  const std::string x = graph.nodes()[index].inputs[0];
  const auto shape = shapes.shape(x);
  if (x.empty() || !shape) return false;
  std::vector<std::size_t> run = {index};
  for (;;) {
    const std::string& y = graph.nodes()[run.back()].outputs[0];
    if (graph.is_graph_output(y)) return false;  // its name is the graph's interface
    if (run.size() > 1 && shapes.shape(y) == shape) break;
    const auto next = sole_reader(graph, y);
    if (!next || !is_reshape(graph.nodes()[*next]) || graph.nodes()[*next].inputs[0] != y)
      return false;
    run.push_back(*next);
  }
  const std::string y = graph.nodes()[run.back()].outputs[0];
  std::vector<std::string> names;
  for (std::size_t k : run) names.push_back(describe(graph.nodes()[k]));
  for (std::size_t reader : graph.consumers(y)) rename_value(graph.node(reader), y, x);
  std::sort(run.rbegin(), run.rend());
  for (std::size_t k : run) graph.erase_node(k);
  report.notes.push_back(fmt::format("dropped {}: together they give '{}' its own shape back",
                                     fmt::join(names, ", "), x));
  return true;
}

PassReport fuse_activations(graph::Graph& graph) {
  PassReport report;
  report.pass = "activation-fusion";
  detail::StaticShapes shapes(graph);
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    // After a drop, node i is the one after the run: look at it again.
    while (i < graph.nodes().size() && drop_identity_reshapes_at(graph, i, shapes, report))
      report.changed = true;
  }
  for (std::size_t i = 0; i < graph.nodes().size(); ++i)
    report.changed = hoist_activation_at(graph, i, report) || report.changed;
  // A fused node lands at or after `i` and is not a candidate again (it has parts), so one
  // sweep visits every conv once.
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    try {
      if (fuse_at(graph, i, report)) report.changed = true;
    } catch (const std::exception& e) {
      // A malformed attribute (wrong type): leave the nodes as they are and say why.
      report.notes.push_back(fmt::format("kept {}: {}", describe(graph.nodes()[i]), e.what()));
    }
  }
  // Then the linear products, then the chains no conv or product heads. A fused node lands at
  // or after `i`, the nodes it passed over move to `i` onwards: look at `i` again.
  for (const auto fuse : {fuse_linear_at, fuse_chain_at}) {
    for (std::size_t i = 0; i < graph.nodes().size();) {
      bool fused = false;
      try {
        fused = fuse(graph, i, shapes, report);
      } catch (const std::exception& e) {
        report.notes.push_back(fmt::format("kept {}: {}", describe(graph.nodes()[i]), e.what()));
      }
      report.changed = report.changed || fused;
      if (!fused) ++i;
    }
  }
  return report;
}

}  // namespace refold::passes
