#include "model_inputs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "refold/error.h"

namespace refold::cli {

std::vector<Tensor> random_inputs(const graph::Graph& graph, std::int64_t batch,
                                  bool override_batch, std::uint64_t seed) {
  Generator gen(seed);
  std::vector<Tensor> result;
  for (const graph::ValueInfo& input : graph.inputs) {
    if (input.elem_type != 1) {
      throw Error(fmt::format("input '{}': element type {} needs real data (--input)", input.name,
                              input.elem_type));
    }
    if (!input.shape) {
      throw Error(
          fmt::format("input '{}' has no declared shape; give its data (--input)", input.name));
    }
    Shape sizes;
    for (std::size_t i = 0; i < input.shape->size(); ++i) {
      const graph::Dim& d = (*input.shape)[i];
      if (i == 0 && (override_batch || !d.is_static())) {
        sizes.push_back(batch);
      } else if (d.is_static()) {
        sizes.push_back(d.value);
      } else {
        throw Error(fmt::format("input '{}': dim {} is symbolic ('{}'); give its data (--input)",
                                input.name, i, d.param));
      }
    }
    result.push_back(randn(sizes, {}, gen));
  }
  return result;
}

bool OutputDiff::within_model_tolerance() const {
  return max_abs <= 1e-4 * std::max(1.0, reference_max_abs);
}

OutputDiff compare_outputs(const std::vector<Tensor>& actual,
                           const std::vector<Tensor>& reference) {
  if (actual.size() != reference.size()) {
    throw Error(fmt::format("compare: {} outputs vs {}", actual.size(), reference.size()));
  }
  OutputDiff diff;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (actual[i].sizes() != reference[i].sizes()) {
      throw Error(fmt::format("compare: output {} is {}, the reference {}", i,
                              actual[i].description(), reference[i].description()));
    }
    const std::vector<float> a = actual[i].to(DType::Float32).to_vector();
    const std::vector<float> r = reference[i].to(DType::Float32).to_vector();
    for (std::size_t k = 0; k < a.size(); ++k) {
      const double d = std::abs(static_cast<double>(a[k]) - r[k]);
      // NaN on one side only is an infinite error; NaN on both sides agrees.
      const bool nan_a = std::isnan(a[k]), nan_r = std::isnan(r[k]);
      diff.max_abs = std::max(diff.max_abs, nan_a != nan_r ? INFINITY : (nan_a ? 0.0 : d));
      if (!nan_r) diff.reference_max_abs = std::max(diff.reference_max_abs, std::abs(double{r[k]}));
    }
  }
  return diff;
}

}  // namespace refold::cli
