#include "passes/node_module.h"

#include <algorithm>

#include "onnx/opset.h"
#include "ops/op.h"
#include "passes/add_softmax.h"
#include "passes/axis_linear.h"
#include "passes/channel_route.h"
#include "passes/group_sum.h"
#include "passes/l2_normalize.h"
#include "passes/patch_shuffle.h"
#include "passes/rearrange.h"
#include "passes/scaled_matmul.h"

namespace refold::passes {

int build_opset(const graph::Graph& graph, const graph::Node& node) {
  const ops::OpDef* def = ops::find_op(node);
  return std::max(onnx::ai_onnx_opset(graph), def != nullptr ? def->min_opset : 0);
}

nn::ModulePtr module_for(const graph::Graph& graph, const graph::Node& node) {
  if (!node.parts.empty() && node.op_type == node.parts.front().op_type)
    return fused_module(graph, node);
  if (node.domain == "refold" && node.op_type == "PatchShuffle")
    return detail::build_patch_shuffle(node);
  if (node.domain == "refold" && node.op_type == "ChannelRoute")
    return detail::build_channel_route(node);
  if (node.domain == "refold" && node.op_type == "ScaledMatMul")
    return detail::build_scaled_matmul(node);
  if (node.domain == "refold" && node.op_type == "AddSoftmax")
    return detail::build_add_softmax(node);
  if (node.domain == "refold" && node.op_type == "GroupSum") return detail::build_group_sum(node);
  if (node.domain == "refold" && node.op_type == "AxisLinear")
    return detail::build_axis_linear(node);
  if (node.domain == "refold" && node.op_type == "L2Normalize")
    return detail::build_l2_normalize(node);
  if (node.domain == "refold" && node.op_type == "Rearrange") return detail::build_rearrange(node);
  return ops::build_module({node, graph, build_opset(graph, node)});
}

graph::Node with_module(const graph::Graph& graph, graph::Node node) {
  node.module = module_for(graph, node);
  return node;
}

}  // namespace refold::passes
