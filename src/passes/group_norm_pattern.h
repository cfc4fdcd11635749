// GroupNorm as exporters write it before opset 18 (torch.onnx's nn.GroupNorm, timm's
// GroupNorm1): a Reshape to [N, G, M], an InstanceNormalization over it, a Reshape back,
//   r = Reshape(x, [N, G, M]);  i = InstanceNormalization(r, s, b);  y = Reshape(i, shape(x))
// becomes one GroupNormalization(x, s, b, num_groups G) node whose parts are the three matched
// nodes (the exporter writes those back, so the file keeps its opset). canonicalize runs it.
//
// Why exact: x is [N, C, d…] with C divisible by G and M = (C/G)·∏d, so in x's row-major order
// row [n, g, :] of r is exactly group g of sample n — channels g·C/G … (g+1)·C/G − 1 at every
// spatial position. InstanceNormalization normalizes each row by its own mean and variance
// (+ epsilon) and applies s[g], b[g]; GroupNormalization (opset 18: scale and bias per group)
// computes the same on x directly, and the Reshape back restores x's shape. The fused node keeps
// its input's memory format (ops::LayoutRule::FirstInput; native::group_norm takes NHWC), where
// the Reshapes wrote fresh NCHW tensors: the layout pass no longer permutes around it.
//
// Preconditions: x's and both Reshapes' output shapes are static (passes/known_values.h), x is
// floating and at least 2-d, s and b are 1-d constants of length G, the two inner values have
// exactly the reader shown and are not graph outputs.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "passes/known_values.h"
#include "refold/graph/graph.h"

namespace refold::passes::detail {

struct GroupNormMatch {
  std::string x, scale, bias, y;
  std::int64_t groups = 0;
  std::int64_t channels = 0;  // C, of x [N, C, d…]
  float epsilon = 1e-5f;
  std::vector<std::size_t> parts;  // the Reshape, the InstanceNormalization, the Reshape
};

// The pattern around the InstanceNormalization node `index`, or nullopt.
std::optional<GroupNormMatch> match_group_norm(const graph::Graph& graph, std::size_t index,
                                               StaticShapes& shapes);

// Replaces the match by its GroupNormalization node; returns the note.
std::string fuse_group_norm(graph::Graph& graph, const GroupNormMatch& m);

}  // namespace refold::passes::detail
