// What runs a node, made from the node's data alone: its op type, attributes, inputs and the
// graph's constants (docs/architecture.md, "One truth per node"). The passes rewrite only that
// data and then ask for the module here; none builds or changes a module itself, so what runs
// is always what the graph (and the exported ONNX) says.
//
//   - a fused node named after its first part (activation-fusion's Conv + post-ops, or a chain
//     of elementwise ops): the chain its parts compute, replayed part by part (fused_module);
//   - refold's own ops (domain "refold", made only by passes and exported as their parts):
//     PatchShuffle (passes/patch_shuffle.h), ScaledMatMul (passes/scaled_matmul.h) and
//     Rearrange (passes/rearrange.h), from their attributes;
//   - any other node, a fused one with an op of its own included (Gelu from its Erf form): the
//     op's builder (ops::build_module) at build_opset (a node a pass made, exported as its parts
//     or valid there).
#pragma once

#include <cstddef>

#include "refold/graph/graph.h"

namespace refold::passes {

nn::ModulePtr module_for(const graph::Graph& graph, const graph::Node& node);

// The ai.onnx opset module_for builds `node`'s op at: the graph's, or the op's first implemented
// opset when that is later. A pass making a node writes its data for that version.
int build_opset(const graph::Graph& graph, const graph::Node& node);

// A fused chain's module (activation_fusion.cpp, which makes such nodes): the conv of parts[0]
// with the post-op chain of the other parts (wrapped in FusedConvAdd when one adds a residual),
// or an ElementwiseChain when the parts start with no conv. Throws refold::Error when the parts
// are not a chain the pass could have made.
nn::ModulePtr fused_module(const graph::Graph& graph, const graph::Node& node);

// node.module = module_for(graph, node), for a node about to be inserted.
graph::Node with_module(const graph::Graph& graph, graph::Node node);

}  // namespace refold::passes
