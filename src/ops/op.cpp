// The op registry (find_op over the family tables) and what builders share.
#include "ops/op.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "core/check.h"
#include "ops/tensor_values.h"

namespace refold::ops {
namespace {

using Registry = std::unordered_map<std::string, const OpDef*>;

Registry make_registry() {
  Registry registry;
  for (const auto* table :
       {&activation_ops(), &arithmetic_ops(), &batch_norm_ops(), &col2im_ops(), &concat_ops(),
        &conv_ops(), &gemm_ops(), &indexing_ops(), &normalization_ops(), &pad_ops(), &pool_ops(),
        &recurrent_ops(), &reduce_ops(), &reshape_ops(), &resize_ops(), &softmax_ops(),
        &transpose_ops(), &unary_ops(), &values_ops()}) {
    for (const OpDef& def : *table) {
      const bool added = registry.emplace(def.op_type, &def).second;
      REFOLD_CHECK(added, "internal: op {} is defined twice", def.op_type);
    }
  }
  return registry;
}

}  // namespace

bool is_ai_onnx(const graph::Node& node) { return node.domain.empty() || node.domain == "ai.onnx"; }

const OpDef* find_op(const std::string& op_type) {
  static const Registry registry = make_registry();
  const auto it = registry.find(op_type);
  return it == registry.end() ? nullptr : it->second;
}

const OpDef* find_op(const graph::Node& node) {
  return is_ai_onnx(node) ? find_op(node.op_type) : nullptr;
}

std::optional<std::string> unsupported_reason(const graph::Node& node, int opset) {
  if (!is_ai_onnx(node)) {
    return fmt::format("domain '{}' (op {}) is not supported; refold runs ai.onnx ops", node.domain,
                       node.op_type);
  }
  const OpDef* def = find_op(node.op_type);
  if (def == nullptr) return fmt::format("{} is not implemented", node.op_type);
  if (opset < def->min_opset) {
    return fmt::format("{} at opset {} is not implemented (refold implements it from opset {})",
                       node.op_type, opset, def->min_opset);
  }
  return std::nullopt;
}

nn::ModulePtr build_module(const BuildContext& context) {
  if (auto reason = unsupported_reason(context.node, context.opset)) fail("{}", *reason);
  return find_op(context.node.op_type)->build(context);
}

std::string input_name(const graph::Node& node, std::size_t i) {
  return i < node.inputs.size() ? node.inputs[i] : std::string();
}

bool is_constant_input(const graph::Graph& graph, const graph::Node& node, std::size_t i) {
  const std::string name = input_name(node, i);
  return !name.empty() && graph.is_constant(name);
}

void check_arity(const graph::Node& node, std::size_t min_inputs, std::size_t max_inputs,
                 std::size_t max_outputs, bool first_output_optional) {
  const std::size_t n = node.inputs.size();
  REFOLD_CHECK(n >= min_inputs && n <= max_inputs, "expects {} to {} inputs, got {}", min_inputs,
               max_inputs, n);
  for (std::size_t i = 0; i < min_inputs; ++i)
    REFOLD_CHECK(!node.inputs[i].empty(), "input {} is required but empty", i);
  const bool any_output = first_output_optional
                              ? std::any_of(node.outputs.begin(), node.outputs.end(),
                                            [](const std::string& o) { return !o.empty(); })
                              : !node.outputs.empty() && !node.outputs[0].empty();
  REFOLD_CHECK(any_output, "has no output");
  for (std::size_t i = max_outputs; i < node.outputs.size(); ++i)
    REFOLD_CHECK(node.outputs[i].empty(), "unsupported: output {} ('{}') is not implemented", i,
                 node.outputs[i]);
}

void check_floating(const Tensor& t, const std::string& what) {
  REFOLD_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::BFloat16,
               "{} has dtype {}; only float32 and bfloat16 are supported", what,
               dtype_name(t.dtype()));
}

std::optional<Tensor> constant_input(const BuildContext& context, std::size_t i) {
  const auto& inputs = context.node.inputs;
  if (i >= inputs.size() || inputs[i].empty() || !context.graph.is_constant(inputs[i]))
    return std::nullopt;
  return context.graph.constant(inputs[i]);
}

std::optional<std::vector<std::int64_t>> constant_ints(const BuildContext& context, std::size_t i,
                                                       const char* what) {
  const auto t = constant_input(context, i);
  if (!t) return std::nullopt;
  return int64_vector(*t, context.node.op_type.c_str(), what);
}

int declared_elem_type(const BuildContext& context, std::size_t i) {
  const auto& inputs = context.node.inputs;
  if (i >= inputs.size() || inputs[i].empty()) return 0;
  for (const auto* list : {&context.graph.inputs, &context.graph.value_info}) {
    for (const graph::ValueInfo& v : *list)
      if (v.name == inputs[i]) return v.elem_type;
  }
  return 0;
}

}  // namespace refold::ops
