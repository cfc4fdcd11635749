// Inputs for a graph the user gave no data for: deterministic random tensors of the declared
// shapes, and the comparison of two runs' outputs.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/tensor.h"

namespace refold::cli {

// --input-shape NAME=1x3x224x224 (repeatable), parsed and checked against the model: the name
// is a graph input, the rank is the declared one, and each static declared dim is kept (a
// symbolic dim takes any size). Errors name the input, the dim and both values.
using InputShapes = std::map<std::string, Shape>;
InputShapes parse_input_shapes(const std::vector<std::string>& specs, const graph::Graph& graph);

// One tensor per graph input: N(0, 1) float32 from a generator seeded with `seed`, of the shape
// given in `shapes` when there is one; else the declared shape, where a symbolic first dim
// takes `batch` and a static first dim is replaced by `batch` when `batch` > 0 and the user
// asked for it (override_batch). Other symbolic dims are an error naming the input.
std::vector<Tensor> random_inputs(const graph::Graph& graph, std::int64_t batch,
                                  bool override_batch, const InputShapes& shapes = {},
                                  std::uint64_t seed = 1);

// Largest |a − b| over all outputs, and that relative to the largest |reference| (the model
// tolerance of docs/testing.md reads max|a − b| ≤ 1e-4 · max(1, max|ref|)).
struct OutputDiff {
  double max_abs = 0;
  double reference_max_abs = 0;
  bool within_model_tolerance() const;
};
OutputDiff compare_outputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference);

}  // namespace refold::cli
