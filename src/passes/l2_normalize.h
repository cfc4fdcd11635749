// F.normalize (x / max(‖x‖₂, ε) along one axis), as exporters write it:
//   n = ReduceL2(x, axes [a], keepdims 1);  d = Clip(n, min ε) | Max(n, ε) | n;  y = Div(x, d)
// (the Expand of d to x's shape that torch.onnx writes is gone by then: simplify drops it, Div
// broadcasts d itself) is one L2Normalize node (domain "refold", attributes axis = a, epsilon =
// ε, 0 without a bound; input x) whose parts are the matched nodes: the exporter writes them
// back, so the file stays standard ONNX. Its module is ops::L2Normalize, which reads x where it
// lies: XCiT normalizes q and k over the tokens straight out of its fused qkv product (they were
// copied out first, for the ReduceL2 and the Div, which do not read views), Swin-V2's cosine
// attention and cosine classifiers over the features. canonicalize runs it.
//
// Why exact: the kernel computes the same three steps — the norm summed in double and rounded
// once (ReduceL2), the float32 maximum with ε (Clip and Max agree for a norm ≥ 0; a NaN norm
// stays NaN), the float32 quotient (Div).
//
// Preconditions: the ReduceL2 reads the Div's dividend and reduces one constant axis keeping
// it; ε is a constant finite float scalar, and Clip has no upper bound; n and d are read by the
// next node alone and are not graph outputs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/nn/module.h"

namespace refold::passes::detail {

struct L2NormalizeMatch {
  std::string x, y;  // y = x / max(‖x‖₂ along axis, epsilon)
  std::int64_t axis = 0;
  float epsilon = 0.0f;
  std::vector<std::size_t> parts;  // the ReduceL2, the Clip or Max if any, the Div
};

// The match at node `index` (a Div), or nullopt.
std::optional<L2NormalizeMatch> match_l2_normalize(const graph::Graph& graph, std::size_t index);
// Rewrites it; returns the pass's note.
std::string fuse_l2_normalize(graph::Graph& graph, const L2NormalizeMatch& m);
// The module of an L2Normalize node.
nn::ModulePtr build_l2_normalize(const graph::Node& node);

}  // namespace refold::passes::detail
