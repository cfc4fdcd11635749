#include "passes/branch_nodes.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "core/check.h"
#include "nn/layout.h"
#include "ops/op.h"
#include "passes/node_module.h"
#include "refold/error.h"
#include "refold/reparam/module_kernels.h"

namespace refold::passes::detail {
namespace {

// The node's module as exactly `M` (a subclass, e.g. a conv with a fused activation, is
// something else and is left alone).
template <typename M>
std::shared_ptr<M> exact_module(const graph::Node& node, const char* type_name) {
  if (!node.module || node.module->type_name() != type_name || !node.parts.empty()) return nullptr;
  return std::dynamic_pointer_cast<M>(node.module);
}

std::string join_names(const graph::Graph& graph, const std::vector<std::size_t>& indices) {
  std::string out;
  for (std::size_t i : indices) {
    if (!out.empty()) out += ", ";
    out += describe(graph.nodes()[i]);
  }
  return out;
}

}  // namespace

std::string describe(const graph::Node& node) {
  return fmt::format("{} '{}'", node.op_type, node.name);
}

std::string origin_of(const graph::Graph& graph, std::vector<std::size_t> parts) {
  std::sort(parts.begin(), parts.end());
  std::vector<std::string> names;
  for (std::size_t p : parts) names.push_back(graph.nodes()[p].op_type);
  return fmt::format("{}", fmt::join(names, "+"));
}

void replace_with_fused(graph::Graph& graph, std::vector<std::size_t> parts, graph::Node fused,
                        FusedAt at) {
  std::sort(parts.begin(), parts.end());
  for (std::size_t p : parts) fused.parts.push_back(graph.nodes()[p]);
  if (!fused.module) fused = with_module(graph, std::move(fused));
  // The last part's index once the parts before it are gone; the first part's never moves.
  const std::size_t position =
      at == FusedAt::FirstPart ? parts.front() : parts.back() - (parts.size() - 1);
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) graph.erase_node(*it);
  graph.insert_node(position, std::move(fused));
}

bool is_op(const graph::Node& node, const char* op_type) {
  return node.op_type == op_type && ops::is_ai_onnx(node);
}

bool is_reshape(const graph::Node& n) {
  return n.parts.empty() && n.outputs.size() == 1 && !n.inputs.empty() &&
         (is_op(n, "Reshape") || is_op(n, "Flatten") || is_op(n, "Squeeze") ||
          is_op(n, "Unsqueeze"));
}

std::optional<BetweenReshapes> between_reshapes(const graph::Graph& graph, std::size_t index) {
  auto reshape = [](const graph::Node& n) {
    return is_op(n, "Reshape") && n.parts.empty() && n.outputs.size() == 1 && !n.inputs.empty() &&
           !n.inputs[0].empty();
  };
  const graph::Node& middle = graph.nodes()[index];
  if (middle.inputs.empty() || middle.outputs.size() != 1) return std::nullopt;
  const std::string& r = middle.inputs[0];
  const auto first = graph.producer(r);
  if (!first || !reshape(graph.nodes()[*first]) || !single_use_problem(graph, r, index).empty())
    return std::nullopt;
  const std::string& out = middle.outputs[0];
  if (graph.is_graph_output(out)) return std::nullopt;
  const std::vector<std::size_t> readers = graph.consumers(out);
  if (readers.size() != 1 || !reshape(graph.nodes()[readers[0]]) ||
      graph.nodes()[readers[0]].inputs[0] != out)
    return std::nullopt;
  BetweenReshapes b{*first, readers[0], graph.nodes()[*first].inputs[0],
                    graph.nodes()[readers[0]].outputs[0]};
  if (graph.is_constant(b.x)) return std::nullopt;
  return b;
}

std::shared_ptr<nn::Conv2d> conv_module(const graph::Node& node) {
  auto conv = exact_module<nn::Conv2d>(node, "Conv2d");
  // A conv with a fused activation is no longer linear in its kernel.
  return conv && conv->post_ops().empty() ? conv : nullptr;
}

std::shared_ptr<nn::ConvTranspose2d> conv_transpose_module(const graph::Node& node) {
  return exact_module<nn::ConvTranspose2d>(node, "ConvTranspose2d");
}

std::shared_ptr<nn::BatchNorm2d> batch_norm_module(const graph::Node& node) {
  return exact_module<nn::BatchNorm2d>(node, "BatchNorm2d");
}

std::shared_ptr<nn::AvgPool2d> avg_pool_module(const graph::Node& node) {
  return exact_module<nn::AvgPool2d>(node, "AvgPool2d");
}

std::string conv_problem(const graph::Graph& graph, const graph::Node& node) {
  const bool transpose = is_op(node, "ConvTranspose");
  if (!transpose && !is_op(node, "Conv")) return fmt::format("{} is not a Conv", describe(node));
  if (node.inputs.size() < 2 || node.outputs.size() != 1)
    return fmt::format("{} has {} inputs and {} outputs, expected 2-3 and 1", describe(node),
                       node.inputs.size(), node.outputs.size());
  for (std::size_t i = 1; i < node.inputs.size(); ++i) {
    const std::string& v = node.inputs[i];
    if (!v.empty() && !graph.is_constant(v))
      return fmt::format("{}: {} '{}' is not a constant", describe(node),
                         i == 1 ? "weight" : "bias", v);
  }
  const bool plain =
      transpose ? conv_transpose_module(node) != nullptr : conv_module(node) != nullptr;
  if (!plain)
    return fmt::format("{} is not run by a plain {} module (runs {})", describe(node),
                       transpose ? "ConvTranspose2d" : "Conv2d",
                       node.module ? node.module->type_name() : "nothing");
  return {};
}

std::string batch_norm_problem(const graph::Graph& graph, const graph::Node& node) {
  if (!is_op(node, "BatchNormalization"))
    return fmt::format("{} is not a BatchNormalization", describe(node));
  if (node.attributes.get_int("training_mode", 0) != 0)
    return fmt::format("{} is in training mode (training_mode=1)", describe(node));
  if (node.attributes.get_int("spatial", 1) != 1)
    return fmt::format("{} normalizes per activation (spatial=0)", describe(node));
  if (node.inputs.size() != 5)
    return fmt::format("{} has {} inputs, expected 5", describe(node), node.inputs.size());
  static const char* const kParams[] = {"scale", "B", "input_mean", "input_var"};
  for (std::size_t i = 1; i < 5; ++i) {
    if (node.inputs[i].empty() || !graph.is_constant(node.inputs[i]))
      return fmt::format("{}: {} '{}' is not a constant", describe(node), kParams[i - 1],
                         node.inputs[i]);
  }
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {
    const std::string& v = node.outputs[i];
    if (!v.empty() && (!graph.consumers(v).empty() || graph.is_graph_output(v)))
      return fmt::format("{}: its optional output '{}' is used", describe(node), v);
  }
  if (!batch_norm_module(node))
    return fmt::format("{} is not run by a plain BatchNorm2d module (runs {})", describe(node),
                       node.module ? node.module->type_name() : "nothing");
  return {};
}

std::optional<std::size_t> sole_reader(const graph::Graph& graph, const std::string& value) {
  if (graph.is_graph_output(value)) return std::nullopt;
  const std::vector<std::size_t> readers = graph.consumers(value);
  if (readers.size() != 1) return std::nullopt;
  return readers[0];
}

std::optional<std::size_t> sole_plain_reader(const graph::Graph& graph, const std::string& value,
                                             const char* op_type) {
  const auto reader = sole_reader(graph, value);
  if (!reader) return std::nullopt;
  const graph::Node& n = graph.nodes()[*reader];
  if (!is_op(n, op_type) || !n.parts.empty() || n.outputs.size() != 1) return std::nullopt;
  return reader;
}

std::string single_use_problem(const graph::Graph& graph, const std::string& value,
                               std::size_t consumer) {
  if (graph.is_graph_output(value)) return fmt::format("'{}' is a graph output", value);
  const std::vector<std::size_t> users = graph.consumers(value);
  if (users.size() != 1 || users[0] != consumer)
    return fmt::format("'{}' has {} consumers ({})", value, users.size(), join_names(graph, users));
  const auto& ins = graph.nodes()[consumer].inputs;
  if (std::count(ins.begin(), ins.end(), value) != 1)
    return fmt::format("'{}' is read twice by {}", value, describe(graph.nodes()[consumer]));
  return {};
}

std::optional<Tensor> constant_value(const graph::Graph& graph, const std::string& name) {
  if (name.empty()) return std::nullopt;
  if (graph.is_constant(name)) return graph.constant(name);
  const auto p = graph.producer(name);
  if (!p) return std::nullopt;
  const graph::Node& n = graph.nodes()[*p];
  if (!is_op(n, "Constant") || n.outputs.size() != 1 || !n.attributes.has("value"))
    return std::nullopt;
  Tensor value = n.attributes.get_tensor("value");
  if (!value.defined()) return std::nullopt;
  return value;
}

std::optional<std::vector<std::int64_t>> reduce_axes(const graph::Graph& graph,
                                                     const graph::Node& node) {
  if (node.attributes.has("axes")) return node.attributes.get_ints("axes");
  if (node.inputs.size() < 2 || node.inputs[1].empty()) return std::nullopt;
  const auto axes = detail::constant_value(graph, node.inputs[1]);
  if (!axes || axes->dtype() != DType::Int64 || axes->dim() > 1) return std::nullopt;
  const auto* data = axes->contiguous().data<std::int64_t>();
  return std::vector<std::int64_t>(data, data + axes->numel());
}

std::optional<std::vector<double>> axis_values(const Tensor& t, std::int64_t from_end,
                                               std::int64_t rank) {
  if (t.dtype() != DType::Float32 || t.dim() > rank || t.numel() == 0) return std::nullopt;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (d != t.dim() - from_end && t.size(d) != 1) return std::nullopt;
  const std::vector<float> v = t.to_vector();
  return std::vector<double>(v.begin(), v.end());
}

std::variant<AxisAffine, std::string> axis_affine(const graph::Graph& graph,
                                                  const graph::Node& node, std::int64_t from_end,
                                                  std::int64_t rank) {
  const std::string who = describe(node);
  if (!node.parts.empty()) return fmt::format("{} is a fused node", who);
  if (node.inputs.empty() || node.inputs[0].empty()) return fmt::format("{} has no input", who);
  AxisAffine a{node.inputs[0], {}};
  if (is_op(node, "Neg")) {
    a.affine.scale = {-1.0};
    return a;
  }
  if (is_op(node, "BatchNormalization")) {
    if (std::string why = batch_norm_problem(graph, node); !why.empty()) return why;
    if (rank - from_end != 1)
      return fmt::format("{} normalizes axis 1 of a {}-d value, not its axis {}", who, rank,
                         rank - from_end);
    try {
      a.affine = reparam::batch_norm_affine(reparam::params_of(*batch_norm_module(node)));
    } catch (const Error& e) {
      return fmt::format("{}: {}", who, e.message());
    }
    return a;
  }
  const bool add = is_op(node, "Add"), sub = is_op(node, "Sub"), mul = is_op(node, "Mul");
  if (!add && !sub && !mul && !is_op(node, "Div")) return fmt::format("{} is not affine", who);
  if (node.inputs.size() != 2) return fmt::format("{} does not have two inputs", who);
  const auto t0 = constant_value(graph, node.inputs[0]), t1 = constant_value(graph, node.inputs[1]);
  if (t0 && t1) return fmt::format("{} has two constant inputs", who);
  if (!t0 && !t1) return fmt::format("{} has no constant input", who);
  const auto c = axis_values(t0 ? *t0 : *t1, from_end, rank);
  if (!c) return fmt::format("{}: the constant does not broadcast per channel", who);
  a.operand = node.inputs[t0 ? 1 : 0];
  std::vector<double>& scale = a.affine.scale;
  std::vector<double>& shift = a.affine.shift;
  if (add) {
    shift = *c;
  } else if (sub) {  // x − c, or c − x = −x + c
    shift = *c;
    if (t0) {
      scale = {-1.0};
    } else {
      for (double& v : shift) v = -v;
    }
  } else if (mul) {
    scale = *c;
  } else {  // Div
    if (t0) return fmt::format("{} divides by the value", who);
    scale = *c;
    for (double& v : scale) {
      if (v == 0) return fmt::format("{} divides by 0", who);
      v = 1.0 / v;
    }
  }
  return a;
}

// ONNX Pad: opset 11+ takes pads [x1_begin, x2_begin, …, x1_end, …] and the value as inputs
// (and from opset 18 `axes`); older opsets take them as attributes `pads` and `value`.
std::variant<ConstantPad, std::string> constant_pad_of(const graph::Graph& graph,
                                                       const graph::Node& node) {
  const std::string who = describe(node);
  if (node.attributes.get_string("mode", "constant") != "constant")
    return fmt::format("{} is not in constant mode", who);
  if (node.inputs.size() > 3 && !node.inputs[3].empty())
    return fmt::format("{} pads selected axes", who);
  std::vector<float> pads, value;
  if (node.inputs.size() >= 2 && !node.inputs[1].empty()) {
    const auto t = constant_value(graph, node.inputs[1]);
    if (!t) return fmt::format("{}: pads '{}' is not a constant", who, node.inputs[1]);
    pads = t->to_vector();
  } else {
    for (std::int64_t v : node.attributes.get_ints("pads")) pads.push_back(static_cast<float>(v));
  }
  if (node.inputs.size() >= 3 && !node.inputs[2].empty()) {
    const auto t = constant_value(graph, node.inputs[2]);
    if (!t) return fmt::format("{}: constant_value '{}' is not a constant", who, node.inputs[2]);
    value = t->to_vector();
  } else {
    value = {node.attributes.get_float("value", 0.0f)};
  }
  if (value.size() != 1) return fmt::format("{} pads with {} values", who, value.size());
  if (pads.size() != 8) return fmt::format("{} does not pad a 4-d tensor", who);
  if (pads[0] != 0 || pads[1] != 0 || pads[4] != 0 || pads[5] != 0)
    return fmt::format("{} pads the batch or channel axis", who);
  for (float v : pads)
    if (v < 0) return fmt::format("{} crops (negative pads)", who);
  const auto i = [&](std::size_t k) { return static_cast<std::int64_t>(pads[k]); };
  return ConstantPad{{i(2), i(3), i(6), i(7)}, value[0]};
}

// ONNX Slice: opset 10+ takes starts, ends, axes, steps as inputs, older opsets starts, ends,
// axes as attributes. A crop of c rows is independent of the size only as start = c ≥ 0 and
// end = −c (or past the end, any value ≥ 2^31 − 1, for c = 0).
std::variant<Pads2d, std::string> crop_of(const graph::Graph& graph, const graph::Node& node) {
  const std::string who = describe(node);
  std::vector<float> v[4];  // starts, ends, axes, steps
  static const char* const kNames[] = {"starts", "ends", "axes", "steps"};
  for (std::size_t k = 0; k < 4; ++k) {
    if (node.inputs.size() > k + 1 && !node.inputs[k + 1].empty()) {
      const auto t = constant_value(graph, node.inputs[k + 1]);
      if (!t)
        return fmt::format("{}: {} '{}' is not a constant", who, kNames[k], node.inputs[k + 1]);
      v[k] = t->to_vector();
    } else {
      for (std::int64_t i : node.attributes.get_ints(kNames[k]))
        v[k].push_back(static_cast<float>(i));
    }
  }
  const std::size_t n = v[0].size();
  if (v[2].empty())
    for (std::size_t i = 0; i < n; ++i) v[2].push_back(static_cast<float>(i));
  if (v[3].empty()) v[3].assign(n, 1.0f);
  if (n == 0 || v[1].size() != n || v[2].size() != n || v[3].size() != n)
    return fmt::format("{} has starts, ends, axes and steps of different lengths", who);
  Pads2d crop;
  for (std::size_t i = 0; i < n; ++i) {
    const float start = v[0][i], end = v[1][i], step = v[3][i];
    const bool to_end = end >= 2147483647.0f;
    const auto axis = static_cast<std::int64_t>(v[2][i] < 0 ? v[2][i] + 4 : v[2][i]);
    if (step != 1) return fmt::format("{} has a step other than 1", who);
    if (axis < 2 || axis > 3) {
      if (start == 0 && to_end) continue;  // the whole batch or channel axis
      return fmt::format("{} slices the batch or channel axis", who);
    }
    if (start < 0 || !(end < 0 || to_end))
      return fmt::format("{}: a crop by starts {} and ends {} depends on the input size", who,
                         start, end);
    const auto begin_cut = static_cast<std::int64_t>(start);
    const std::int64_t end_cut = to_end ? 0 : static_cast<std::int64_t>(-end);
    (axis == 2 ? crop.top : crop.left) = -begin_cut;
    (axis == 2 ? crop.bottom : crop.right) = -end_cut;
  }
  return crop;
}

graph::Attributes conv_attributes(Size2d k, const nn::Conv2dOptions& o) {
  const Pads2d p = o.padding().resolve(k, o.dilation());
  graph::Attributes a;
  a.set("kernel_shape", std::vector<std::int64_t>{k.h, k.w});
  a.set("strides", std::vector<std::int64_t>{o.stride().h, o.stride().w});
  a.set("pads", std::vector<std::int64_t>{p.top, p.left, p.bottom, p.right});
  a.set("dilations", std::vector<std::int64_t>{o.dilation().h, o.dilation().w});
  a.set("group", o.groups());
  return a;
}

Tensor in_format(const Tensor& t, MemoryFormat format) {
  return t.defined() && t.dim() == 4 ? nn::detail::to_memory_format(t, format) : t;
}

void set_conv(graph::Graph& graph, graph::Node& node, const std::string& input,
              const std::string& constant_base, const reparam::ConvKernel& kernel,
              const nn::Conv2dOptions& geometry, MemoryFormat format) {
  const Size2d k(kernel.weight.size(2), kernel.weight.size(3));
  node.op_type = "Conv";
  node.domain.clear();
  node.attributes = conv_attributes(k, nn::Conv2dOptions(geometry).groups(kernel.groups));
  node.inputs =
      add_parameter_constants(graph, input, constant_base, in_format(kernel.weight, format),
                              in_format(kernel.bias, format));
  node.module = module_for(graph, node);
}

std::vector<std::string> add_parameter_constants(graph::Graph& graph, const std::string& input,
                                                 const std::string& base, const Tensor& weight,
                                                 const Tensor& bias) {
  std::vector<std::string> inputs = {input, graph.unique_name(base + ".weight")};
  graph.set_constant(inputs[1], weight);
  if (bias.defined()) {
    inputs.push_back(graph.unique_name(base + ".bias"));
    graph.set_constant(inputs[2], bias);
  }
  return inputs;
}

std::size_t replace_nodes(graph::Graph& graph, std::vector<std::size_t> erase, std::size_t anchor,
                          std::vector<graph::Node> nodes) {
  REFOLD_CHECK(!nodes.empty(), "replace_nodes: no node to insert");
  std::sort(erase.begin(), erase.end());
  erase.erase(std::unique(erase.begin(), erase.end()), erase.end());
  std::set<std::string> read;  // what the new nodes read
  for (const graph::Node& n : nodes) read.insert(n.inputs.begin(), n.inputs.end());
  // A Constant node read only by the erased nodes (a Pad's amounts) goes with them. One the new
  // nodes read (a Reshape's shape, carried over) moves to just before them when it came after
  // the anchor: a Constant reads nothing, so it may come anywhere earlier.
  std::vector<graph::Node> hoisted;
  for (std::size_t i : std::vector<std::size_t>(erase)) {
    for (const std::string& v : graph.nodes()[i].inputs) {
      const auto p = graph.producer(v);
      if (!p || !is_op(graph.nodes()[*p], "Constant") || graph.is_graph_output(v)) continue;
      if (read.count(v) != 0) {
        if (*p > anchor && std::find(erase.begin(), erase.end(), *p) == erase.end()) {
          hoisted.push_back(graph.nodes()[*p]);
          erase.push_back(*p);
        }
        continue;
      }
      const std::vector<std::size_t> users = graph.consumers(v);
      if (std::all_of(users.begin(), users.end(), [&](std::size_t u) {
            return std::find(erase.begin(), erase.end(), u) != erase.end();
          }))
        erase.push_back(*p);
    }
  }
  std::sort(erase.begin(), erase.end());
  erase.erase(std::unique(erase.begin(), erase.end()), erase.end());
  // Every value the erased nodes read or wrote, to tidy up after them.
  std::set<std::string> touched;
  for (std::size_t i : erase) {
    const graph::Node& n = graph.nodes()[i];
    touched.insert(n.inputs.begin(), n.inputs.end());
    touched.insert(n.outputs.begin(), n.outputs.end());
  }
  const auto before_anchor = static_cast<std::size_t>(
      std::count_if(erase.begin(), erase.end(), [&](std::size_t i) { return i < anchor; }));
  for (auto it = erase.rbegin(); it != erase.rend(); ++it) graph.erase_node(*it);
  std::size_t at = anchor - before_anchor;
  for (graph::Node& n : hoisted) graph.insert_node(at++, std::move(n));
  for (graph::Node& n : nodes) graph.insert_node(at++, std::move(n));
  --at;  // the last new node

  std::set<std::string> live;
  for (const graph::Node& n : graph.nodes()) {
    live.insert(n.inputs.begin(), n.inputs.end());
    live.insert(n.outputs.begin(), n.outputs.end());
  }
  for (const graph::ValueInfo& v : graph.outputs) live.insert(v.name);
  for (const graph::ValueInfo& v : graph.inputs) live.insert(v.name);
  for (const std::string& v : touched) {
    if (live.count(v) != 0) continue;
    graph.erase_constant(v);  // no-op for a value that is not a constant
    auto& info = graph.value_info;
    info.erase(std::remove_if(info.begin(), info.end(),
                              [&](const graph::ValueInfo& vi) { return vi.name == v; }),
               info.end());
  }
  return at;
}

std::size_t replace_nodes(graph::Graph& graph, std::vector<std::size_t> erase, std::size_t anchor,
                          graph::Node node) {
  std::vector<graph::Node> nodes;
  nodes.push_back(std::move(node));
  return replace_nodes(graph, std::move(erase), anchor, std::move(nodes));
}

std::size_t replace_nodes_at_first(graph::Graph& graph, const std::vector<std::size_t>& erase,
                                   std::vector<graph::Node> nodes) {
  const std::size_t first = *std::min_element(erase.begin(), erase.end());
  return replace_nodes(graph, erase, first, std::move(nodes));
}

}  // namespace refold::passes::detail
