#include "refold/graph/ops/batch_norm.h"

#include <fmt/ranges.h>

#include "core/check.h"
#include "refold/functional.h"

namespace refold::graph::ops {

BatchNormalization::BatchNormalization(double epsilon)
    : Op("BatchNormalization"), epsilon_(epsilon) {}

std::vector<Tensor> BatchNormalization::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 5, "BatchNormalization: expects 5 inputs, got {}", in.size());
  const char* names[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (std::size_t i = 0; i < 5; ++i)
    REFOLD_CHECK(in[i].defined(), "BatchNormalization: {} is required", names[i]);
  const Tensor& x = in[0];
  REFOLD_CHECK(x.dim() >= 2, "BatchNormalization: X must be at least 2-d [N, C, …], got [{}]",
               fmt::join(x.sizes(), ", "));
  for (std::size_t i = 1; i < 5; ++i) {
    REFOLD_CHECK(in[i].dim() == 1 && in[i].size(0) == x.size(1),
                 "BatchNormalization: {} must be 1-d of length {} (X's channels), got [{}]",
                 names[i], x.size(1), fmt::join(in[i].sizes(), ", "));
    REFOLD_CHECK(in[i].dtype() == x.dtype(), "BatchNormalization: {} has dtype {} but X has {}",
                 names[i], dtype_name(in[i].dtype()), dtype_name(x.dtype()));
  }
  return {functional::batch_norm(x, in[3], in[4], in[1], in[2], epsilon_)};
}

}  // namespace refold::graph::ops
