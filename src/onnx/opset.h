// The ai.onnx opset a graph's nodes are built for: the one its source model declares, or what
// export writes for a graph built in C++. The passes rebuild a node's module with it
// (ops::build_module) when its inputs change from values to constants.
#pragma once

#include "refold/graph/graph.h"

namespace refold::onnx {

// The opset export writes for a graph built in C++ (no source model).
inline constexpr int kDefaultOpset = 17;

int ai_onnx_opset(const graph::Graph& graph);

}  // namespace refold::onnx
