// Constant inputs of a node, as the tensor builders read them (tensor_builders.h), and the
// declared element type of a runtime one.
#include "graph/ops/tensor_values.h"
#include "onnx/ops/tensor_builders.h"

namespace refold::onnx::ops {

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
  return graph::ops::int64_vector(*t, context.node.op_type.c_str(), what);
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

}  // namespace refold::onnx::ops
