// activation-fusion: a conv's activation (and a residual Add before it) runs inside the conv's
// primitive (oneDNN post-ops), so the conv output is written once instead of written, read and
// written again.
//
// Patterns (c = the conv's output; every intermediate value has exactly the consumers shown and
// is not a graph output, so removing it loses nothing — docs/reliability.md F22):
//   Conv → Relu                           relu(c)
//   Conv → Clip(0, 6) / Clip(0, +inf)     relu6(c) / relu(c)
//   Conv → LeakyRelu(alpha)               c ≥ 0 ? c : alpha·c
//   Conv → Sigmoid                        1 / (1 + e^−c)
//   Conv → HardSwish                      c·relu6(c + 3)/6  (ONNX's alpha = 1/6, beta = 0.5)
//   Conv → HardSigmoid(1/6, 0.5)          relu6(c + 3)/6 = clamp(c/6 + 0.5, 0, 1); only
//                                         PyTorch's constants (ONNX's default alpha is 0.2)
//   Mul(c, Sigmoid(c))                    SiLU, c·σ(c) (c read by exactly the two nodes)
//   Add(c, r) [→ activation above]        act(c + r): Conv2d::forward_with_residual
// The conv is a plain nn::Conv2d (constant weights; ConvTranspose2d has no fused post-ops)
// with no activation yet, so a conv's activation is never applied before its Add.
//
// Apply: one node named as the conv (its weights keep their names), op_type "Conv", writing
// the last part's output (the surviving output name), inputs = the conv's inputs (+ "" for an
// absent bias, then r, for the Add form), parts = the replaced nodes in order (the exporter
// writes them back as standard ONNX), placed where the last part was (every input is defined
// there). Module: the same Conv2d with set_activation(act), or FusedConvAdd around it.
// An Add with a constant addend is left alone: that is a bias (a later fold), not a residual.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ops/op.h"
#include "passes/branch_nodes.h"
#include "passes/fused_conv.h"
#include "passes/passes.h"
#include "refold/nn/conv.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;

// The activation that reads `value`, found from its consumers.
struct ActivationMatch {
  Activation activation = Activation::None;
  double negative_slope = 0.01;
  std::vector<std::size_t> nodes;  // the activation's nodes, in graph order
  std::string output;              // the value the activation writes
  std::string problem;             // non-empty: a candidate that cannot fuse, and why
};

// The op's post-op reader (src/ops/op.h), or null when the node is not an activation.
ops::ActivationReader activation_reader(const graph::Node& node) {
  const ops::OpDef* def = ops::find_op(node);
  return def != nullptr ? def->as_activation : nullptr;
}

// Sets m.activation from the single activation node `index`; m.problem when it cannot fuse.
void match_single(const graph::Graph& graph, std::size_t index, ActivationMatch& m) {
  const graph::Node& n = graph.nodes()[index];
  m.nodes = {index};
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

// The activation applied to `value`, if one reads it (nullopt: nothing to fuse, no note).
std::optional<ActivationMatch> match_activation(const graph::Graph& graph,
                                                const std::string& value) {
  const std::vector<std::size_t> readers = graph.consumers(value);
  ActivationMatch m;
  if (readers.size() == 2) {
    // SiLU: Mul(value, Sigmoid(value)), operands in either order.
    const graph::Node& a = graph.nodes()[readers[0]];
    const graph::Node& b = graph.nodes()[readers[1]];
    if (!is_op(a, "Sigmoid") || !is_op(b, "Mul") || a.inputs.size() != 1 || a.outputs.size() != 1 ||
        b.inputs.size() != 2 || b.outputs.size() != 1) {
      return std::nullopt;
    }
    const std::string& s = a.outputs[0];
    const bool operands =
        (b.inputs[0] == value && b.inputs[1] == s) || (b.inputs[0] == s && b.inputs[1] == value);
    if (!operands) return std::nullopt;
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
  match_single(graph, readers[0], m);
  return m;
}

// A fused node's outputs replace the last part's; it goes where that part was.
void replace_with_fused(graph::Graph& graph, std::vector<std::size_t> parts, graph::Node fused) {
  std::sort(parts.begin(), parts.end());
  for (std::size_t p : parts) fused.parts.push_back(graph.nodes()[p]);
  const std::size_t position = parts.back() - (parts.size() - 1);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) graph.erase_node(*it);
  graph.insert_node(position, std::move(fused));
}

std::string origin_of(const graph::Graph& graph, const std::vector<std::size_t>& parts) {
  std::vector<std::string> names;
  for (std::size_t p : parts) names.push_back(graph.nodes()[p].op_type);
  return fmt::format("{}", fmt::join(names, "+"));
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
    candidate = candidate || activation_reader(n) != nullptr || is_op(n, "Mul") || is_op(n, "Add");
  }
  if (!candidate) return false;
  auto decline = [&](const std::string& why) {
    report.notes.push_back(fmt::format("kept {}: {}", describe(conv_node), why));
    return false;
  };
  if (!conv) return decline("its weights are not constants held by an nn::Conv2d");
  if (conv->activation() != Activation::None) return false;  // fused already
  // set_activation changes the module: a module that also runs another node (a weight-tied
  // net built in C++) would change that node too.
  for (std::size_t j = 0; j < graph.nodes().size(); ++j) {
    if (j != index && graph.nodes()[j].module == conv_node.module) {
      return decline(fmt::format("its module also runs {}", describe(graph.nodes()[j])));
    }
  }
  if (graph.is_graph_output(c)) return decline(fmt::format("its output '{}' is a graph output", c));

  // Conv + Add(c, r) [+ activation].
  if (readers.size() == 1 && is_op(graph.nodes()[readers[0]], "Add")) {
    const std::size_t add_index = readers[0];
    const graph::Node& add = graph.nodes()[add_index];
    if (add.inputs.size() != 2 || add.outputs.size() != 1 || add.inputs[0] == add.inputs[1]) {
      return decline(fmt::format("{} is not a residual Add of it", describe(add)));
    }
    const bool conv_first = add.inputs[0] == c;
    const std::string& r = conv_first ? add.inputs[1] : add.inputs[0];
    if (graph.is_constant(r)) {
      return decline(
          fmt::format("{} adds the constant '{}' (a bias, not a residual)", describe(add), r));
    }
    std::vector<std::size_t> parts = {index, add_index};
    ActivationMatch act;
    std::string out = add.outputs[0];
    if (!graph.is_graph_output(out)) {
      if (auto m = match_activation(graph, out)) {
        if (m->problem.empty()) {
          act = *m;
          parts.insert(parts.end(), m->nodes.begin(), m->nodes.end());
          out = m->output;
        } else {
          report.notes.push_back(fmt::format("{}: left the activation after {} unfused: {}",
                                             describe(conv_node), describe(add), m->problem));
        }
      }
    }
    graph::Node fused;
    fused.name = conv_node.name;
    fused.op_type = "Conv";
    fused.attributes = conv_node.attributes;
    fused.inputs = conv_node.inputs;
    fused.inputs.resize(3);  // x, W, B ("" when absent)
    fused.inputs.push_back(r);
    fused.outputs = {out};
    fused.origin = origin_of(graph, parts);
    const std::string note =
        fmt::format("fused {} into {} ({})", describe(conv_node), fused.origin, out);
    conv->set_activation(act.activation, act.negative_slope);
    fused.module = std::make_shared<FusedConvAdd>(conv, conv_first);
    replace_with_fused(graph, parts, std::move(fused));
    report.notes.push_back(note);
    return true;
  }

  // Conv + activation.
  std::optional<ActivationMatch> m = match_activation(graph, c);
  if (!m) {
    if (readers.size() == 1) return false;  // a Mul of c and something else: not a SiLU
    return decline(
        fmt::format("its output '{}' has {} readers; a fused activation needs it to "
                    "have one",
                    c, readers.size()));
  }
  if (!m->problem.empty()) return decline(m->problem);
  std::vector<std::size_t> parts = {index};
  parts.insert(parts.end(), m->nodes.begin(), m->nodes.end());
  graph::Node fused;
  fused.name = conv_node.name;
  fused.op_type = "Conv";
  fused.attributes = conv_node.attributes;
  fused.inputs = conv_node.inputs;
  fused.outputs = {m->output};
  fused.origin = origin_of(graph, parts);
  fused.module = conv;
  const std::string note =
      fmt::format("fused {} into {} ({})", describe(conv_node), fused.origin, m->output);
  conv->set_activation(m->activation, m->negative_slope);
  replace_with_fused(graph, parts, std::move(fused));
  report.notes.push_back(note);
  return true;
}

}  // namespace

PassReport fuse_activations(graph::Graph& graph) {
  PassReport report;
  report.pass = "activation-fusion";
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
  return report;
}

}  // namespace refold::passes
