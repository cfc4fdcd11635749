#include "refold/graph/ops/softmax.h"

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::graph::ops {

std::vector<Tensor> Softmax::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "Softmax: expects 1 input, got {}",
               inputs.size());
  return {coerce_2d_ ? reference::softmax_coerced_2d(inputs[0], axis_)
                     : reference::softmax(inputs[0], axis_)};
}

}  // namespace refold::graph::ops
