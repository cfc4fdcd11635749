// refold::model_inputs — inputs for a graph the user gave no data for (deterministic random
// tensors of the declared or given shapes), and the comparison of two runs' outputs under the
// model tolerance of docs/testing.md. The CLI's --input-shape, refold::optimize_model's
// verification and refold::Session's input checks share them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/tensor.h"

namespace refold {

// Shapes given for graph inputs, by name (symbolic dims resolved).
using InputShapes = std::map<std::string, Shape>;
// "the model has no input 'x' (inputs: a, b)", and when 'x' is an initializer listed as a graph
// input (ONNX IR 3), that refold reads it as a constant: why a name given for it is refused.
std::string no_such_input(const graph::Graph& graph, const std::string& name);
// Checks `shapes` against the model: each name is a graph input, the rank is the declared one,
// and each static declared dim is kept (a symbolic dim takes any size). Errors name the input,
// the dim and both values, prefixed by `what` ("--input-shape", "input_shapes").
void check_input_shapes(const InputShapes& shapes, const graph::Graph& graph,
                        const std::string& what = "--input-shape");
// --input-shape NAME=1x3x224x224 (repeatable), parsed; the second form also checks them against
// the model (check_input_shapes).
InputShapes parse_input_shapes(const std::vector<std::string>& specs);
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
  static constexpr double kModelTolerance = 1e-4;
  static constexpr const char* kModelToleranceText = "1e-4 * max(1, max|ref|)";
  bool within_model_tolerance() const;
};
OutputDiff compare_outputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference);

}  // namespace refold
