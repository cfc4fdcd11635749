#include "ops/l2_normalize.h"

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/l2_normalize.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/view_op.h"

namespace refold::ops {

Tensor L2Normalize::normalized(const std::vector<Tensor>& inputs) const {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "L2Normalize: expects 1 input, got {}",
               inputs.size());
  const Tensor& x = inputs[0];
  return dispatch(
      type_name(),
      {{"native",
        [&](std::string* declined) { return native::l2_normalize(x, axis_, epsilon_, declined); }}},
      [&] {
        // ReduceL2(keepdims) → Clip(min ε) → Div, as the exporter wrote them.
        const Tensor norm = reference::reduce(x, {axis_}, true, reference::ReduceOp::L2);
        return reference::arith(x, reference::clip(norm, epsilon_, std::nullopt),
                                reference::ArithOp::Div);
      });
}

std::vector<Tensor> L2Normalize::run(const std::vector<Tensor>& inputs) {
  Tensor y = normalized(inputs);
  const bool dense_in_a_format =
      y.is_contiguous() || (y.dim() == 4 && y.is_contiguous(MemoryFormat::ChannelsLast));
  return {dense_in_a_format ? with_format_strides(y) : y.contiguous()};
}

std::vector<Tensor> L2Normalize::run_views(std::vector<Tensor>& inputs) {
  return {normalized(inputs)};
}

}  // namespace refold::ops
