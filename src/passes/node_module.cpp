#include "passes/node_module.h"

#include <algorithm>

#include "onnx/opset.h"
#include "ops/op.h"

namespace refold::passes {

nn::ModulePtr module_for(const graph::Graph& graph, const graph::Node& node) {
  if (!node.parts.empty() && node.op_type == node.parts.front().op_type)
    return fused_module(graph, node);
  const ops::OpDef* def = ops::find_op(node);
  const int opset = std::max(onnx::ai_onnx_opset(graph), def != nullptr ? def->min_opset : 0);
  return ops::build_module({node, graph, opset});
}

graph::Node with_module(const graph::Graph& graph, graph::Node node) {
  node.module = module_for(graph, node);
  return node;
}

}  // namespace refold::passes
