#include "passes/fused_conv.h"

#include "core/check.h"
#include "core/tensor_impl.h"
#include "kernels/post_ops.h"
#include "kernels/reference/conv_common.h"
#include "ops/arithmetic.h"
#include "refold/functional.h"

namespace refold::passes {

FusedConvAdd::FusedConvAdd(std::shared_ptr<nn::Conv2d> conv, bool conv_first)
    : Op("FusedConvAdd"), conv_(std::move(conv)), conv_first_(conv_first) {
  REFOLD_CHECK(conv_ != nullptr, "FusedConvAdd: the conv is null");
  register_module("conv", conv_);
}

std::vector<Tensor> FusedConvAdd::run(const std::vector<Tensor>& inputs) {
  return run(inputs, false);
}

std::vector<Tensor> FusedConvAdd::run_consuming(std::vector<Tensor>& inputs) {
  return run(inputs, inputs.size() >= 4 && refold::detail::sole_handle(inputs[3]));
}

std::vector<Tensor> FusedConvAdd::run(const std::vector<Tensor>& inputs, bool overwrite_residual) {
  REFOLD_CHECK(inputs.size() >= 4, "{}: expects at least 4 inputs (x, W, B, residual), got {}",
               type_name(), inputs.size());
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
    return {conv_->forward_with_residual(x, r, overwrite_residual)};
  }
  // Unfused: exactly the replaced nodes (the conv, then its chain with the residual added by
  // ONNX Add with broadcasting, in the Add's operand order).
  const Tensor y = functional::conv2d(x, conv.weight(), conv.bias(), conv.options().op_options());
  ops::Binary add(reference::ArithOp::Add);
  PostOps post = conv.post_ops();
  post.residual = r;
  return {reference::apply_post_ops(y, post, [&](const Tensor& v) {
    return add.run(conv_first_ ? std::vector<Tensor>{v, r} : std::vector<Tensor>{r, v})[0];
  })};
}

}  // namespace refold::passes
