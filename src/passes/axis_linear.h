// A Linear along an axis that is not the last, as exporters write it:
//   t = Transpose(x, p);  m = MatMul(t, W);  [a = Add(m, b)];  y = Transpose(·, q),  q = p⁻¹
// with W a constant [K, N] and b a constant of N values along the last axis ([N], [1, …, N]):
// x.transpose(1, 2) → nn.Linear → .transpose(1, 2) of MLP-Mixer's, ResMLP's and gMLP's token
// mixing, permute(0, 2, 3, 1) → nn.Linear → permute(0, 3, 1, 2) of CaiT's talking heads. It
// becomes one AxisLinear node (domain "refold", attribute axis = p's last entry, inputs x, W
// and b) whose parts are the matched nodes: the exporter writes them back, so the file stays
// standard ONNX. Its module is ops::AxisLinear, which reads x where it lies: no copy for either
// transpose, and the tensors after it keep x's layout instead of the strided one the transposes
// left (CaiT's softmax and attn · v read the scores in rows again). canonicalize runs it.
//
// Why exact: t[…, k] = x[…, k @ axis, …] with the other axes in p's order and y = q applied to
// the product undoes that order, so y[…, n @ axis, …] = Σ_k x[…, k @ axis, …] · W[k, n] + b[n]
// — the same sums of the same products, in the same order per output.
//
// Preconditions: p given (the default reversal needs the rank) and q its inverse; t, m and a
// read by the next matched node alone and not graph outputs; W float 2-d.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/nn/module.h"

namespace refold::passes::detail {

struct AxisLinearMatch {
  std::string x, w, b, y;  // b empty when there is no Add
  std::int64_t axis = 0;
  std::vector<std::size_t> parts;  // the Transpose, the MatMul, the Add if any, the Transpose
};

// The match at node `index` (the MatMul), or nullopt.
std::optional<AxisLinearMatch> match_axis_linear(const graph::Graph& graph, std::size_t index);
// Rewrites it; returns the pass's note.
std::string fuse_axis_linear(graph::Graph& graph, const AxisLinearMatch& m);
// The module of an AxisLinear node, from its axis attribute.
nn::ModulePtr build_axis_linear(const graph::Node& node);

}  // namespace refold::passes::detail
