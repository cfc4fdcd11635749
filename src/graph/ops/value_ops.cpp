#include "refold/graph/ops/value_ops.h"

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::graph::ops {

Constant::Constant(Tensor value) : Op("Constant"), value_(std::move(value)) {
  REFOLD_CHECK(value_.defined(), "Constant: value is undefined");
}

std::vector<Tensor> Constant::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.empty(), "Constant: expects no inputs, got {}", inputs.size());
  return {value_};
}

std::vector<Tensor> Cast::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "Cast: expects 1 input, got {}",
               inputs.size());
  reference::CastTarget target = reference::CastTarget::Float32;
  switch (to_) {
    case To::Float32:
      target = reference::CastTarget::Float32;
      break;
    case To::BFloat16:
      target = reference::CastTarget::BFloat16;
      break;
    case To::Int64:
      target = reference::CastTarget::Int64;
      break;
    case To::Int32:
      target = reference::CastTarget::Int32;
      break;
    case To::Bool:
      target = reference::CastTarget::Bool;
      break;
  }
  return {reference::cast(inputs[0], target)};
}

std::vector<Tensor> Equal::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 2, "Equal: expects 2 inputs, got {}", inputs.size());
  return {reference::equal(inputs[0], inputs[1])};
}

std::vector<Tensor> Where::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 3, "Where: expects 3 inputs, got {}", inputs.size());
  return {reference::where(inputs[0], inputs[1], inputs[2])};
}

}  // namespace refold::graph::ops
