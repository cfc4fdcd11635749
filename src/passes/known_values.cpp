// What is known statically about a value: its shape (rank and dims) and dtype, from the
// graph's declarations, constants and the producers that fix or keep them.
#include "passes/known_values.h"

#include <algorithm>
#include <iterator>

#include "passes/branch_nodes.h"

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

}  // namespace refold::passes::detail
