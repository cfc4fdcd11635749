// What is known statically about a value of a graph, for the passes that may rewrite a node
// only when its output keeps its input's shape or dtype (simplify) or needs a 4-d input
// (reparameterize): followed through declarations (graph inputs, value_info), constants, a
// Conv's constant weight, and the ops that keep their input's shape or dtype.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/dtype.h"
#include "refold/graph/graph.h"

namespace refold::passes::detail {

// A shape as far as it is known: the rank, and each dim or −1 when it is not.
using KnownShape = std::vector<std::int64_t>;

// The declared type of a graph input or an intermediate value (value_info), or null.
const graph::ValueInfo* declared_value(const graph::Graph& graph, const std::string& value);

// `value`'s shape or dtype when known (`depth`: how far producers have been followed).
std::optional<KnownShape> known_shape(const graph::Graph& graph, const std::string& value,
                                      int depth = 0);
std::optional<DType> known_dtype(const graph::Graph& graph, const std::string& value,
                                 int depth = 0);

}  // namespace refold::passes::detail
