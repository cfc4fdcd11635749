#include "onnx/shared_constants.h"

#include "refold/graph/op.h"

namespace refold::onnx {

void bind_module_constants(graph::Graph& graph, const graph::Node& node) {
  if (node.module == nullptr || dynamic_cast<graph::Op*>(node.module.get()) != nullptr) return;
  std::vector<nn::NamedTensor> held = node.module->named_parameters(false);
  for (auto& buffer : node.module->named_buffers(false)) held.push_back(buffer);
  for (std::size_t i = 1; i < node.inputs.size(); ++i) {
    const std::string& name = node.inputs[i];
    if (name.empty() || !graph.is_constant(name)) continue;
    const Tensor& constant = graph.constant(name);
    for (const auto& [param_name, param] : held) {
      if (param.is_same(constant)) break;
      const bool same_view =
          param.data_ptr() == constant.data_ptr() && param.sizes() == constant.sizes() &&
          param.strides() == constant.strides() && param.dtype() == constant.dtype();
      if (same_view) {
        graph.set_constant(name, param, graph.constant_source(name));
        break;
      }
    }
  }
}

}  // namespace refold::onnx
