// Constant folding with an explicit size budget (passes.h's fold_constants uses the default).
#pragma once

#include <cstddef>

#include "refold/graph/graph.h"
#include "refold/passes/pipeline.h"

namespace refold::passes {

// A folded result larger than this stays a node (docs/reliability.md G2, after ONNX Runtime
// PR #28055): an Expand or Tile of a small constant would otherwise turn a small model into a huge
// file and keep the tensor resident for the graph's lifetime. 64 MiB holds any conv weight of the
// networks refold targets (ResNet-152's largest is 9.4 MiB).
inline constexpr std::size_t kMaxFoldedBytes = std::size_t{64} << 20;

// fold_constants() with `max_bytes` instead of kMaxFoldedBytes (tests use a small budget).
PassReport fold_constants(graph::Graph& graph, std::size_t max_bytes);

}  // namespace refold::passes
