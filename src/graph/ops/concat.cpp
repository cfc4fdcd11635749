#include "refold/graph/ops/concat.h"

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "refold/functional.h"

namespace refold::graph::ops {

std::vector<Tensor> Concat::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(!inputs.empty(), "Concat: expects at least 1 input");
  bool floating = true;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    REFOLD_CHECK(inputs[k].defined(), "Concat: input {} is missing", k);
    floating = floating && is_floating(inputs[k].dtype());
  }
  // Same validation either way; functional::cat is the path a faster kernel will take.
  if (floating && inputs[0].dim() > 0) return {functional::cat(inputs, axis_)};
  return {reference::concat(inputs, axis_)};
}

}  // namespace refold::graph::ops
