#include "passes/fused_conv.h"

#include "core/check.h"
#include "kernels/reference/conv_common.h"
#include "ops/arithmetic.h"
#include "refold/functional.h"

namespace refold::passes {

FusedConvAdd::FusedConvAdd(std::shared_ptr<nn::Conv2d> conv, bool conv_first)
    : Op("FusedConvAdd"), conv_(std::move(conv)), conv_first_(conv_first) {
  REFOLD_CHECK(conv_ != nullptr, "FusedConvAdd: the conv is null");
  register_module("conv", conv_);
}

Tensor apply_activation(const Tensor& x, Activation activation, double negative_slope) {
  switch (activation) {
    case Activation::None:
      return x;
    case Activation::ReLU:
      return functional::relu(x);
    case Activation::ReLU6:
      return functional::relu6(x);
    case Activation::LeakyReLU:
      return functional::leaky_relu(x, negative_slope);
    case Activation::Sigmoid:
      return functional::sigmoid(x);
    case Activation::SiLU:
      return functional::silu(x);
    case Activation::HardSwish:
      return functional::hardswish(x);
    case Activation::HardSigmoid:
      return functional::hardsigmoid(x);
  }
  fail("apply_activation: unknown activation ({})", static_cast<int>(activation));
}

std::vector<Tensor> FusedConvAdd::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 4, "{}: expects 4 inputs (x, W, B, residual), got {}", type_name(),
               inputs.size());
  const Tensor& x = inputs[0];
  const Tensor& r = inputs[3];
  REFOLD_CHECK(x.defined(), "{}: input x is undefined", type_name());
  REFOLD_CHECK(r.defined(), "{}: the residual is undefined", type_name());
  const nn::Conv2d& conv = *conv_;
  // The conv output's sizes, with every check conv2d makes (same messages).
  const auto g =
      reference::detail::check_conv2d(x, conv.weight(), conv.bias(), conv.options().op_options());
  const Shape out_sizes = {g.batch, g.out_channels, g.out_h, g.out_w};
  if (r.sizes() == out_sizes && r.dtype() == x.dtype()) {
    return {conv_->forward_with_residual(x, r)};
  }
  // Unfused: exactly the replaced nodes (conv, ONNX Add with broadcasting, activation).
  const Tensor y = functional::conv2d(x, conv.weight(), conv.bias(), conv.options().op_options());
  ops::Binary add(reference::ArithOp::Add);
  const Tensor sum =
      add.run(conv_first_ ? std::vector<Tensor>{y, r} : std::vector<Tensor>{r, y})[0];
  return {apply_activation(sum, conv.activation(), conv.negative_slope())};
}

}  // namespace refold::passes
