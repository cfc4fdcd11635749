#include "kernels/post_ops.h"

#include <cmath>

#include "core/check.h"
#include "refold/reference.h"

namespace refold {

std::string_view activation_name(Activation activation) {
  switch (activation) {
    case Activation::None:
      return "none";
    case Activation::ReLU:
      return "relu";
    case Activation::ReLU6:
      return "relu6";
    case Activation::LeakyReLU:
      return "leaky_relu";
    case Activation::Sigmoid:
      return "sigmoid";
    case Activation::SiLU:
      return "silu";
    case Activation::HardSwish:
      return "hardswish";
    case Activation::HardSigmoid:
      return "hardsigmoid";
  }
  return "unknown";
}

std::string PostOps::description() const {
  if (empty()) return "none";
  std::string s = residual.defined() ? "sum" : "";
  if (activation != Activation::None) {
    if (!s.empty()) s += '+';
    s += activation_name(activation);
    if (activation == Activation::LeakyReLU) s += fmt::format("({})", negative_slope);
  }
  return s;
}

void check_post_ops(std::string_view op, const PostOps& post, const Shape& output_sizes,
                    DType dtype) {
  const auto a = static_cast<int>(post.activation);
  REFOLD_CHECK(a >= 0 && a <= static_cast<int>(Activation::HardSigmoid),
               "{}: unknown post-op activation ({})", op, a);
  if (post.activation == Activation::LeakyReLU)
    REFOLD_CHECK(std::isfinite(post.negative_slope),
                 "{}: leaky_relu negative_slope ({}) must be finite", op, post.negative_slope);
  if (!post.residual.defined()) return;
  REFOLD_CHECK(post.residual.sizes() == output_sizes,
               "{}: residual must have the output's sizes [{}], got {}", op,
               fmt::join(output_sizes, ", "), post.residual.description());
  REFOLD_CHECK(post.residual.dtype() == dtype,
               "{}: residual dtype {} does not match input dtype {}", op,
               dtype_name(post.residual.dtype()), dtype_name(dtype));
}

namespace reference {

Tensor apply_post_ops(const Tensor& output, const PostOps& post) {
  check_post_ops("apply_post_ops", post, output.sizes(), output.dtype());
  // reference::add keeps its first operand's layout, so the result keeps the op's layout.
  const Tensor y = post.residual.defined() ? add(output, post.residual) : output;
  switch (post.activation) {
    case Activation::None:
      return y;
    case Activation::ReLU:
      return relu(y);
    case Activation::ReLU6:
      return relu6(y);
    case Activation::LeakyReLU:
      return leaky_relu(y, post.negative_slope);
    case Activation::Sigmoid:
      return sigmoid(y);
    case Activation::SiLU:
      return silu(y);
    case Activation::HardSwish:
      return hardswish(y);
    case Activation::HardSigmoid:
      return hardsigmoid(y);
  }
  return y;
}

}  // namespace reference
}  // namespace refold
