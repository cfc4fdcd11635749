// What is known statically about a value: its shape (rank and dims) and dtype, from the
// graph's declarations, constants and the producers that fix or keep them.
#include "passes/known_values.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <exception>
#include <iterator>

#include "core/check.h"
#include "core/stand_in.h"
#include "graph/plan.h"
#include "ops/op.h"
#include "passes/branch_nodes.h"
#include "refold/graph/op.h"

namespace refold::passes::detail {
namespace {

// How deep the shape and dtype queries follow producers.
constexpr int kMaxProducerDepth = 64;

std::optional<DType> dtype_of_elem_type(int elem_type) {
  switch (elem_type) {
    case 1:
      return DType::Float32;
    case 7:
      return DType::Int64;
    case 16:
      return DType::BFloat16;
    default:
      return std::nullopt;
  }
}

// The declared type of a graph input or an intermediate value (value_info), or null.
// Ops whose first output has the shape and dtype of their first input.
bool keeps_shape_and_type(const graph::Node& node) {
  static const char* const kOps[] = {
      "Identity",    "Dropout",   "Relu", "LeakyRelu", "Sigmoid",
      "HardSigmoid", "HardSwish", "Tanh", "Elu",       "Selu",
      "Softplus",    "Clip",      "Neg",  "Abs",       "BatchNormalization",
      "Gelu",        "Mish",      "PRelu"};
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const char* op) { return is_op(node, op); }) &&
         !node.inputs.empty() && !node.inputs[0].empty();
}

// Ops whose first output has the dtype of their first input (and another shape).
bool keeps_type(const graph::Node& node) {
  static const char* const kOps[] = {"Transpose",         "Reshape",      "Flatten", "Squeeze",
                                     "Unsqueeze",         "Pad",          "MaxPool", "AveragePool",
                                     "GlobalAveragePool", "GlobalMaxPool"};
  return std::any_of(std::begin(kOps), std::end(kOps),
                     [&](const char* op) { return is_op(node, op); }) &&
         !node.inputs.empty() && !node.inputs[0].empty();
}

bool is_conv_with_constant_weight(const graph::Graph& graph, const graph::Node& node) {
  return (is_op(node, "Conv") || is_op(node, "ConvTranspose")) && node.inputs.size() >= 2 &&
         detail::constant_value(graph, node.inputs[1]).has_value();
}

}  // namespace

const graph::ValueInfo* declared_value(const graph::Graph& graph, const std::string& value) {
  for (const auto* list : {&graph.inputs, &graph.value_info}) {
    for (const graph::ValueInfo& v : *list)
      if (v.name == value) return &v;
  }
  return nullptr;
}

std::optional<KnownShape> known_shape(const graph::Graph& graph, const std::string& value,
                                      int depth) {
  if (value.empty() || depth > kMaxProducerDepth) return std::nullopt;
  if (const auto c = detail::constant_value(graph, value)) return c->sizes();
  if (const graph::ValueInfo* info = declared_value(graph, value); info && info->shape) {
    KnownShape shape;
    for (const graph::Dim& d : *info->shape) shape.push_back(d.is_static() ? d.value : -1);
    return shape;
  }
  const auto p = graph.producer(value);
  if (!p) return std::nullopt;
  const graph::Node& n = graph.nodes()[*p];
  if (!n.parts.empty() || n.outputs.empty() || n.outputs[0] != value) return std::nullopt;
  if (is_conv_with_constant_weight(graph, n)) {
    // ONNX Conv/ConvTranspose: Y has the rank of W; Conv's Y has W[0] channels, ConvTranspose's
    // W[1]·group.
    const Tensor w = *detail::constant_value(graph, n.inputs[1]);
    KnownShape shape(static_cast<std::size_t>(w.dim()), -1);
    if (w.dim() < 2) return shape;
    shape[1] = is_op(n, "Conv") ? w.size(0) : w.size(1) * n.attributes.get_int("group", 1);
    return shape;
  }
  if (keeps_shape_and_type(n)) return known_shape(graph, n.inputs[0], depth + 1);
  if ((is_op(n, "MaxPool") || is_op(n, "AveragePool")) && n.attributes.has("kernel_shape")) {
    // ONNX pooling: X and Y have rank len(kernel_shape) + 2 and the same N and C.
    KnownShape shape(n.attributes.get_ints("kernel_shape").size() + 2, -1);
    if (const auto in = known_shape(graph, n.inputs[0], depth + 1);
        in && in->size() == shape.size())
      std::copy_n(in->begin(), 2, shape.begin());
    return shape;
  }
  if (is_op(n, "Transpose") && n.inputs.size() == 1) {
    // Output dim i is input dim perm[i].
    const auto in = known_shape(graph, n.inputs[0], depth + 1);
    if (!in) return std::nullopt;
    std::vector<std::int64_t> perm;  // no perm attribute: the dims reversed
    for (std::size_t i = in->size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
    if (n.attributes.has("perm")) perm = n.attributes.get_ints("perm");
    if (perm.size() != in->size()) return std::nullopt;
    KnownShape shape;
    for (std::int64_t axis : perm) {
      if (axis < 0 || axis >= static_cast<std::int64_t>(in->size())) return std::nullopt;
      shape.push_back((*in)[static_cast<std::size_t>(axis)]);
    }
    return shape;
  }
  return std::nullopt;
}

std::optional<DType> known_dtype(const graph::Graph& graph, const std::string& value, int depth) {
  if (value.empty() || depth > kMaxProducerDepth) return std::nullopt;
  if (const auto c = detail::constant_value(graph, value)) return c->dtype();
  if (const graph::ValueInfo* info = declared_value(graph, value))
    return dtype_of_elem_type(info->elem_type);
  const auto p = graph.producer(value);
  if (!p) return std::nullopt;
  const graph::Node& n = graph.nodes()[*p];
  if (!n.parts.empty() || n.outputs.empty() || n.outputs[0] != value) return std::nullopt;
  // ONNX Conv/ConvTranspose: X, W and Y share the type T.
  if (is_conv_with_constant_weight(graph, n))
    return detail::constant_value(graph, n.inputs[1])->dtype();
  if (keeps_shape_and_type(n) || keeps_type(n)) return known_dtype(graph, n.inputs[0], depth + 1);
  // ONNX Add/Sub/Mul/Div: A, B and C share the type T.
  // A constant operand says it at once; else follow A only (one chain, not a tree, of queries).
  if ((is_op(n, "Add") || is_op(n, "Sub") || is_op(n, "Mul") || is_op(n, "Div")) &&
      n.inputs.size() == 2) {
    for (const std::string& in : n.inputs)
      if (const auto c = detail::constant_value(graph, in)) return c->dtype();
    return known_dtype(graph, n.inputs[0], depth + 1);
  }
  return std::nullopt;
}

std::vector<Tensor> run_node(const graph::Node& node,
                             const std::function<Tensor(const std::string&)>& value_of) {
  if (auto* op = dynamic_cast<graph::Op*>(node.module.get())) {
    std::vector<Tensor> args;
    args.reserve(node.inputs.size());
    for (const std::string& in : node.inputs) {
      Tensor t = in.empty() ? Tensor() : value_of(in);
      if (!op->accepts_channels_last() && t.defined() && !t.is_contiguous()) t = t.contiguous();
      args.push_back(std::move(t));
    }
    return op->run(args);
  }
  return {(*node.module)(value_of(node.inputs.at(0)))};
}

std::optional<Shape> StaticShapes::shape(const std::string& value) {
  const std::optional<Known>& k = find(value);
  if (!k) return std::nullopt;
  return k->shape;
}

bool StaticShapes::values_from_shapes(const graph::Node& node) {
  const ops::OpDef* def = ops::find_op(node);
  if (!def || def->shape != ops::ShapeRule::InputShapesOnly) return false;
  return std::all_of(node.inputs.begin(), node.inputs.end(),
                     [&](const std::string& in) { return in.empty() || find(in).has_value(); });
}

std::optional<std::optional<StaticShapes::Known>> StaticShapes::direct(
    const std::string& value) const {
  if (value.empty()) return std::optional<Known>();
  if (const auto c = constant_value(graph_, value)) return Known{c->sizes(), c->dtype()};
  if (graph_.producer(value)) return std::nullopt;
  const auto given = inputs_.find(value);
  const graph::ValueInfo* info =
      graph_.is_graph_input(value) ? declared_value(graph_, value) : nullptr;
  const std::optional<DType> dtype = info ? dtype_of_elem_type(info->elem_type) : std::nullopt;
  if (dtype && given != inputs_.end()) return Known{given->second, *dtype};
  if (!dtype || !info->shape) return std::optional<Known>();
  Known k{{}, *dtype};
  for (const graph::Dim& d : *info->shape) {
    if (!d.is_static()) return std::optional<Known>();
    k.shape.push_back(d.value);
  }
  return k;
}

const std::optional<StaticShapes::Known>& StaticShapes::find(const std::string& value) {
  // Depth first without recursion (a network is thousands of producers deep): a value waits
  // on the stack until its producer's inputs are known.
  std::vector<std::string> stack{value};
  while (!stack.empty()) {
    const std::string v = stack.back();
    if (memo_.count(v) != 0) {
      stack.pop_back();
      continue;
    }
    if (auto d = direct(v)) {
      memo_.emplace(v, std::move(*d));
      stack.pop_back();
      continue;
    }
    const graph::Node& n = graph_.nodes()[*graph_.producer(v)];
    bool ready = true;
    for (const std::string& in : n.inputs) {
      if (!in.empty() && memo_.count(in) == 0) {
        stack.push_back(in);
        ready = false;
      }
    }
    if (!ready) continue;
    stack.pop_back();
    const std::optional<std::vector<Tensor>> outs = run_stand_ins(n);
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      if (n.outputs[k].empty()) continue;
      if (outs && k < outs->size() && (*outs)[k].defined()) {
        memo_[n.outputs[k]] = Known{(*outs)[k].sizes(), (*outs)[k].dtype()};
      } else {
        memo_[n.outputs[k]] = std::nullopt;
      }
    }
    memo_.emplace(v, std::nullopt);  // a value its producer did not write
  }
  return memo_.at(value);
}

std::optional<std::vector<Tensor>> StaticShapes::run_stand_ins(const graph::Node& node) {
  const ops::OpDef* def = ops::find_op(node);
  const ops::ShapeRule rule = def ? def->shape : ops::ShapeRule::Standard;
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string& in = node.inputs[i];
    if (in.empty() || constant_value(graph_, in)) continue;
    const std::optional<Known>& k = find(in);
    // Only a floating input's values can leave the output's shape alone (ops::ShapeRule).
    const bool sets_shape = rule == ops::ShapeRule::ReadsFloatValues ||
                            (rule == ops::ShapeRule::LaterInputsSetShape && i > 0);
    if (!k || !is_floating(k->dtype) || sets_shape) return std::nullopt;
  }
  try {
    const StandInRun stand_in;  // a conv gives its output's shape without computing it
    return run_node(node, [&](const std::string& in) {
      if (const auto c = constant_value(graph_, in)) return *c;
      const Known& k = *memo_.at(in);
      return zeros(k.shape, {k.dtype});
    });
  } catch (const Error& e) {
    if (strict_) throw graph::error_in_node(node, e);
    return std::nullopt;  // left for the run to report, in context
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<DType> StaticShapes::dtype(const std::string& value) {
  const std::optional<Known>& k = find(value);
  if (!k) return std::nullopt;
  return k->dtype;
}

namespace {

// check_static_graph at one set of input shapes.
void check_at(const graph::Graph& graph, const std::map<std::string, Shape>& inputs) {
  StaticShapes shapes(graph, /*strict=*/true, inputs);
  for (const graph::Node& n : graph.nodes()) {
    for (const std::string& out : n.outputs)
      if (!out.empty()) shapes.shape(out);
  }
  auto check = [&](const graph::ValueInfo& v, const char* what) {
    const std::optional<Shape> shape = shapes.shape(v.name);
    if (!shape) return;
    const std::optional<std::size_t> writer = graph.producer(v.name);
    const std::string by = writer ? fmt::format("node '{}' ({})", graph.nodes()[*writer].name,
                                                graph.nodes()[*writer].op_type)
                                  : std::string("the model");
    if (!v.shape) return;
    bool same = v.shape->size() == shape->size();
    for (std::size_t i = 0; same && i < shape->size(); ++i)
      same = !(*v.shape)[i].is_static() || (*v.shape)[i].value == (*shape)[i];
    if (same) return;
    std::string declared;
    for (const graph::Dim& d : *v.shape)
      declared += (declared.empty() ? "" : ", ") +
                  (d.is_static() ? std::to_string(d.value) : (d.param.empty() ? "?" : d.param));
    fail("{} '{}' is declared [{}], but {} computes [{}]", what, v.name, declared, by,
         fmt::join(*shape, ", "));
  };
  for (const graph::ValueInfo& v : graph.outputs) check(v, "graph output");
  for (const graph::ValueInfo& v : graph.value_info) check(v, "value");
}

// The two sizes a symbolic dim takes in the two runs of check_static_graph.
constexpr std::int64_t kBatchTrials[2] = {1, 2};
constexpr std::int64_t kSizeTrials[2] = {64, 96};

}  // namespace

void check_static_graph(const graph::Graph& graph, const std::map<std::string, Shape>& given) {
  // Each open dim's symbol: its dim_param, or (unnamed) the input and axis.
  std::map<std::string, bool> symbols;  // symbol → is some input's first dim
  auto symbol = [](const graph::ValueInfo& v, std::size_t axis) {
    const graph::Dim& d = (*v.shape)[axis];
    return d.param.empty() ? fmt::format("{}[{}]", v.name, axis) : d.param;
  };
  for (const graph::ValueInfo& v : graph.inputs) {
    if (given.count(v.name) != 0 || !v.shape) continue;
    for (std::size_t axis = 0; axis < v.shape->size(); ++axis)
      if (!(*v.shape)[axis].is_static()) symbols[symbol(v, axis)] |= axis == 0;
  }
  auto shapes_at = [&](int trial) {
    std::map<std::string, Shape> shapes = given;
    for (const graph::ValueInfo& v : graph.inputs) {
      if (given.count(v.name) != 0 || !v.shape) continue;
      Shape& s = shapes[v.name];
      for (std::size_t axis = 0; axis < v.shape->size(); ++axis) {
        const graph::Dim& d = (*v.shape)[axis];
        s.push_back(d.is_static()                 ? d.value
                    : symbols.at(symbol(v, axis)) ? kBatchTrials[trial]
                                                  : kSizeTrials[trial]);
      }
    }
    return shapes;
  };
  if (symbols.empty()) return check_at(graph, shapes_at(0));
  std::string errors[2];
  for (int trial = 0; trial < 2; ++trial) {
    try {
      check_at(graph, shapes_at(trial));
      return;  // one size the model runs at: not inconsistent
    } catch (const Error& e) {
      errors[trial] = e.what();
    }
  }
  if (errors[0] != errors[1]) return;  // the error depends on the symbols' sizes
  std::vector<std::string> names;
  for (const auto& entry : symbols) names.push_back(entry.first);
  fail("{} (whatever size{} {} take{})", errors[0], names.size() == 1 ? "" : "s",
       fmt::join(names, ", "), names.size() == 1 ? "s" : "");
}

std::optional<std::int64_t> known_rank(const graph::Graph& graph, StaticShapes& shapes,
                                       const std::string& value) {
  if (const auto s = known_shape(graph, value)) return static_cast<std::int64_t>(s->size());
  if (const auto s = shapes.shape(value)) return static_cast<std::int64_t>(s->size());
  return std::nullopt;
}

}  // namespace refold::passes::detail
