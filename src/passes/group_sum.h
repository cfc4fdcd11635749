// Split attention's sums over the channel groups, as exporters write them (ResNeSt's SplitAttn,
// the radix-r form of selective-kernel attention):
//   s = ReduceSum(Reshape(x, [N, r, C, H, W]), axes [1], keepdims 0)          the groups' sum
//   y = ReduceSum(Mul(Reshape(x, [N, r, C, H, W]), a), axes [1], keepdims 0)  weighted by
//       a [N|1, r, C, 1, 1] (or [r, C, 1, 1]), the attention's softmax over the groups
// with x [N, r·C, H, W], each becomes one GroupSum node (domain "refold", attribute groups = r,
// inputs x and, for the second, a) whose parts are the matched nodes: the exporter writes them
// back, so the file stays standard ONNX. Its module is ops::GroupSum: x is read once where it
// lies and y written in x's memory format, where the Reshape of a channels_last x made an NCHW
// copy of it and left everything after it NCHW until the next conv. canonicalize runs it.
//
// Why exact: Reshape(x, [N, r, C, H, W])[n, k, c, h, w] = x[n, k·C + c, h, w] (row-major order),
// so the ReduceSum over axis 1 is Σ_k x[n, k·C + c, h, w] (· a[n, k, c]), what the kernel sums.
//
// Preconditions: static shapes for x, the Reshape's output and a, with the Reshape splitting
// exactly x's channel axis; the Mul read by the ReduceSum alone and no graph output. The Reshape
// may have other readers (ResNeSt's feeds both sums): the fused node takes its own copy of it as
// a part, and dead-code removes the original once nothing reads it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "passes/known_values.h"
#include "refold/graph/graph.h"
#include "refold/nn/module.h"

namespace refold::passes::detail {

struct GroupSumMatch {
  std::string x, a, y;  // y = Σ_k x's group k (· a's group k); a empty when unweighted
  std::int64_t groups = 0;
  std::size_t reshape = 0;         // the Reshape of x
  std::optional<std::size_t> mul;  // the Mul by a
  std::size_t reduce = 0;          // the ReduceSum
};

// The match at node `index` (a ReduceSum), or nullopt.
std::optional<GroupSumMatch> match_group_sum(const graph::Graph& graph, std::size_t index,
                                             StaticShapes& shapes);
// Rewrites it; returns the pass's note.
std::string fuse_group_sum(graph::Graph& graph, const GroupSumMatch& m);
// The module of a GroupSum node.
nn::ModulePtr build_group_sum(const graph::Node& node);

}  // namespace refold::passes::detail
