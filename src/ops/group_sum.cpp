#include "ops/group_sum.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/group_sum.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/view_op.h"

namespace refold::ops {

std::vector<Tensor> GroupSum::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK((inputs.size() == 1 || inputs.size() == 2) && inputs[0].defined(),
               "GroupSum: expects x and an optional weight, got {} inputs", inputs.size());
  const Tensor& x = inputs[0];
  const Tensor a = inputs.size() == 2 ? inputs[1] : Tensor();
  REFOLD_CHECK(x.dim() == 4 && x.size(1) % groups_ == 0,
               "GroupSum: x [{}] must be 4-d with channels divisible by the {} groups",
               fmt::join(x.sizes(), ", "), groups_);
  return {dispatch(
      type_name(),
      {{"native",
        [&](std::string* declined) { return native::group_sum(x, a, groups_, declined); }}},
      [&] {
        // Reshape → (Mul) → ReduceSum over the group axis, as the exporter wrote them.
        const Tensor split =
            reshaped(x, {x.size(0), groups_, x.size(1) / groups_, x.size(2), x.size(3)}, false);
        const Tensor terms =
            a.defined() ? reference::arith(split, a, reference::ArithOp::Mul) : split;
        return reference::reduce(terms, {1}, false, reference::ReduceOp::Sum);
      })};
}

}  // namespace refold::ops
