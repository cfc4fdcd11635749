#include "ops/softmax.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/softmax.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/concat.h"
#include "ops/op.h"
#include "ops/reshape.h"
#include "ops/transpose.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/basic.h"

namespace refold::ops {

Tensor Softmax::softmax(const Tensor& x, const Tensor& addend) const {
  return dispatch(type_name(),
                  {{"native",
                    [&](std::string* declined) {
                      return native::softmax(x, addend, axis_, kind_, coerce_2d_, declined);
                    }}},
                  [&] {
                    if (addend.defined()) return softmax(functional::add(x, addend), Tensor());
                    return coerce_2d_ ? reference::softmax_coerced_2d(x, axis_, kind_)
                                      : reference::softmax(x, axis_, kind_);
                  });
}

std::vector<Tensor> Softmax::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(
      (inputs.size() == 1 || inputs.size() == 2) &&
          std::all_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return t.defined(); }),
      "{}: expects x and an optional addend, got {} inputs", type_name(), inputs.size());
  return {softmax(inputs[0], inputs.size() == 2 ? inputs[1].contiguous() : Tensor())};
}

template <reference::SoftmaxKind kind>
nn::ModulePtr build_softmax(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const bool coerce = context.opset < 13;
  const std::int64_t axis = context.node.attributes.get_int("axis", coerce ? 1 : -1);
  if (auto input = constant_input(context, 0)) {
    const std::int64_t rank = input->dim();
    REFOLD_CHECK(axis >= -rank && axis < rank + (coerce ? 1 : 0),
                 "axis {} out of range for rank {}", axis, rank);
  }
  return std::make_shared<Softmax>(context.node.op_type, kind, axis, coerce);
}

const std::vector<OpDef>& softmax_ops() {
  static const std::vector<OpDef> table = {
      // v13: one axis instead of the 2-d coercion
      {"Softmax", 1, build_softmax<reference::SoftmaxKind::Softmax>},
      {"LogSoftmax", 1, build_softmax<reference::SoftmaxKind::LogSoftmax>},
      {"Hardmax", 1, build_softmax<reference::SoftmaxKind::Hardmax>},
  };
  return table;
}

}  // namespace refold::ops
