#include "passes/fused_linear.h"

#include "core/check.h"
#include "kernels/post_ops.h"
#include "ops/arithmetic.h"
#include "refold/functional.h"

namespace refold::passes {

FusedLinearAdd::FusedLinearAdd(std::shared_ptr<nn::Linear> linear, bool linear_first)
    : Op("FusedLinearAdd"), linear_(std::move(linear)), linear_first_(linear_first) {
  REFOLD_CHECK(linear_ != nullptr, "FusedLinearAdd: the linear module is null");
  register_module("linear", linear_);
}

std::vector<Tensor> FusedLinearAdd::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 4, "{}: expects 4 inputs (x, W, B, residual), got {}", type_name(),
               inputs.size());
  const Tensor& x = inputs[0];
  const Tensor& r = inputs[3];
  REFOLD_CHECK(x.defined() && x.dim() >= 1, "{}: input x is undefined or a scalar", type_name());
  REFOLD_CHECK(r.defined(), "{}: the residual is undefined", type_name());
  nn::Linear& linear = *linear_;
  Shape out_sizes = x.sizes();
  out_sizes.back() = linear.options().out_features();
  if (r.sizes() == out_sizes && r.dtype() == x.dtype()) return {linear.forward_with_residual(x, r)};
  // Unfused: exactly the replaced nodes (the product, ONNX Add with broadcasting in the Add's
  // operand order, the activation).
  const Tensor y = functional::linear(x, linear.weight(), linear.bias());
  ops::Binary add(reference::ArithOp::Add);
  const Tensor sum =
      add.run(linear_first_ ? std::vector<Tensor>{y, r} : std::vector<Tensor>{r, y})[0];
  return {reference::apply_activation(sum, linear.activation(), linear.negative_slope())};
}

}  // namespace refold::passes
