// If nodes whose condition is known when the model loads, replaced by the branch they take.
//
// Exporters write If where the Python code branches on a shape (torch.jit's scripted helpers in
// timm's SAM2-Hiera: "pad the window position embedding when the grid is smaller"). With static
// input shapes the condition is a constant, and the If is exactly its taken branch: the branch's
// nodes are spliced in where the If was, its initializers join the graph's, and an Identity writes
// each branch output to the If's output name (simplify removes it). A branch value whose name the
// graph already uses is renamed, in the branch and in the subgraphs it nests. An If inside the
// taken branch is resolved the same way in turn.
//
// The condition is found by loading the nodes it depends on — its cone, with the initializers and
// graph inputs they read — as a model of their own and folding its constants
// (passes::fold_constants: constants and the shapes of static inputs). A condition that does not
// fold (it reads input values, or a symbolic shape) is an error naming the node: refold runs no
// control flow at run time.
#pragma once

#include <functional>
#include <memory>

#include "onnx/source_model.h"
#include "refold/graph/graph.h"

namespace refold::onnx::detail {

// Loads a source model as a graph (load.cpp's build_graph with the caller's options and budget).
using BuildGraph =
    std::function<std::shared_ptr<graph::Graph>(std::shared_ptr<graph::SourceModel>)>;

// Resolves every ai.onnx If node of `source`'s main graph in place; `max_nodes` bounds the graph
// as branches are spliced in (docs/reliability.md A11), `max_folded_bytes` each constant folded
// to find a condition (G2).
void inline_static_ifs(graph::SourceModel& source, const BuildGraph& build, std::size_t max_nodes,
                       std::size_t max_folded_bytes);

}  // namespace refold::onnx::detail
