// After build_module: make the graph's constants the very handles the node's module holds.
//
// A builder points a plain module's parameters at the graph constants with set_data (same
// storage, sizes and strides), but the handles stay two: a later set_data on the module's
// parameter (nn::utils::convert_conv2d_weight_memory_format) would leave the graph's constant
// behind. bind_module_constants() replaces each constant input of `node` that a parameter or
// buffer of node.module shares storage with, sizes and strides by that parameter handle, keeping
// the constant's source index, so both see every later change. A graph::Op holds nothing and is
// left alone. Call it once per node, right after build_module (the importer does).
#pragma once

#include "refold/graph/graph.h"

namespace refold::onnx {

void bind_module_constants(graph::Graph& graph, const graph::Node& node);

}  // namespace refold::onnx
