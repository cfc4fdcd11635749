// A product of two computed matrices scaled by constants, as attention writes it:
//   scaled_dot_product_attention exported: MatMul(Mul(q, √s), Mul(kᵀ, √s))
//   hand-written attention:                Mul(MatMul(q, kᵀ), s) or Div(MatMul(q, kᵀ), √d)
// — any of a Mul or Div by a one-element float constant on either operand or on the result —
// is alpha · (a · b), alpha the product of the factors (a Div's as 1/c). A Transpose of the
// (scaled) result whose order keeps the product's last or second-to-last dim innermost —
// attention's (attn · v).transpose(1, 2) before its heads merge, XCiT's permute(0, 3, 1, 2) —
// joins it as `perm`: the product is written straight into the transposed order (ops::matmul
// with perm), so the Reshape that merges the heads is a view instead of a copy.
// It becomes one ScaledMatMul node (domain "refold", attribute alpha, optional ints perm) whose
// parts are the matched nodes: the exporter writes those back, so the file stays standard ONNX.
// Its module is ops::MatMul with alpha, which oneDNN's matmul applies as its output scale: no
// pass over q, kᵀ or the scores, and q and kᵀ stay views of the fused qkv
// (graph::Op::reads_views). canonicalize runs it.
//
// Why exact: scaling commutes with the product, (c₁a)(c₂b) = c₁c₂(ab), up to the rounding of
// the intermediate products (within the float32 tolerance of a matmul); a transpose only moves
// elements.
//
// Preconditions: both operands computed (a constant matrix is linear-fusion's), each matched
// Mul/Div/Transpose read by the next node alone and not a graph output; a factor or a perm.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/nn/module.h"

namespace refold::passes::detail {

struct ScaledMatMulMatch {
  std::string a, b, y;  // the unscaled operands and the scaled product
  double alpha = 1.0;
  std::vector<std::int64_t> perm;  // the result's Transpose; empty when there is none
  std::vector<std::size_t> parts;  // the MatMul and the Muls/Divs/Transpose folded into it
};

// The match at node `index` (a MatMul), or nullopt.
std::optional<ScaledMatMulMatch> match_scaled_matmul(const graph::Graph& graph, std::size_t index);
// Rewrites it; returns the pass's note.
std::string fuse_scaled_matmul(graph::Graph& graph, const ScaledMatMulMatch& m);
// The module of a ScaledMatMul node, from its alpha attribute.
nn::ModulePtr build_scaled_matmul(const graph::Node& node);

}  // namespace refold::passes::detail
