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
  // Where the model itself moves by δ (rounding_sensitivity) when its inputs move by one float32
  // ulp, float32 computes its outputs only to about δ, whoever runs it: a difference of at most
  // kRoundingMargin · δ is rounding, not a wrong rewrite, even past the tolerance.
  static constexpr double kRoundingMargin = 16;
  bool within_model_tolerance() const;
  bool within_rounding(double sensitivity) const {
    return max_abs <= kRoundingMargin * sensitivity;
  }
};
OutputDiff compare_outputs(const std::vector<Tensor>& actual, const std::vector<Tensor>& reference);

// The model's own sensitivity to float32 rounding at `inputs`, whose outputs are `outputs`: the
// largest |f(x') − f(x)| over the outputs, x' every float32 input element moved one ulp up or
// down (a fixed pseudo-random choice per element; other inputs as given). Rounding inside the
// model moves its values by as much at every layer, so two correct float32 implementations of an
// ill-conditioned model — an attention softmax near a tie, large activations that cancel —
// differ by about this much: LeViT-128S (BN statistics randomized) gives δ = 7e-3 at max|y| = 12
// on an N(0, 1) input where ONNX Runtime and PyTorch differ from a float64 run by 1e-2. 0 when
// the perturbed run is not finite where the reference is (no measure).
double rounding_sensitivity(graph::Graph& graph, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& outputs, std::uint64_t seed = 2);

}  // namespace refold
