// The passes of the optimizer, one per file, in pipeline order (pipeline.cpp runs them).
// Each leaves the graph verified, changes nothing it cannot prove equal, and records in its
// report what it did and, for every candidate it declined, why.
#pragma once

#include "refold/graph/graph.h"
#include "refold/passes/pipeline.h"

namespace refold::passes {

PassReport fold_constants(graph::Graph& graph);           // constant_folding.cpp
PassReport simplify_algebra(graph::Graph& graph);         // simplify.cpp
PassReport canonicalize(graph::Graph& graph);             // canonicalize.cpp
PassReport eliminate_dead_code(graph::Graph& graph);      // dead_code.cpp
PassReport drop_dead_taps(graph::Graph& graph);           // dead_taps.cpp
PassReport merge_linear_layers(graph::Graph& graph);      // linear_merging.cpp
PassReport fold_conv_inputs(graph::Graph& graph);         // linear_merging.cpp
PassReport merge_grouped_convs(graph::Graph& graph);      // group_merging.cpp
PassReport fold_batch_norms(graph::Graph& graph);         // bn_folding.cpp
PassReport reparameterize_branches(graph::Graph& graph);  // reparameterize.cpp
PassReport fold_pads(graph::Graph& graph);                // pad_folding.cpp
PassReport fuse_activations(graph::Graph& graph);         // activation_fusion.cpp
PassReport plan_layout(graph::Graph& graph);              // layout.cpp

}  // namespace refold::passes
