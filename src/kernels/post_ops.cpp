#include "kernels/post_ops.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "kernels/reference/onnx_ops.h"
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
    case Activation::GELU:
      return "gelu";
    case Activation::GELUTanh:
      return "gelu_tanh";
  }
  return "unknown";
}

namespace {

std::string activation_description(Activation activation, double negative_slope) {
  std::string s(activation_name(activation));
  if (activation == Activation::LeakyReLU) s += fmt::format("({})", negative_slope);
  return s;
}

// A step's scale or shift: 1 value or one per channel, all finite.
void check_step_values(std::string_view op, std::size_t step, const char* what,
                       const std::vector<float>& values, std::int64_t channels) {
  if (values.empty()) return;
  REFOLD_CHECK(values.size() == 1 || static_cast<std::int64_t>(values.size()) == channels,
               "{}: post-op step {} has {} {} values; it needs 1 or one per channel ({})", op, step,
               values.size(), what, channels);
  for (float v : values)
    REFOLD_CHECK(std::isfinite(v), "{}: post-op step {} has a non-finite {} ({})", op, step, what,
                 v);
}

}  // namespace

void check_activation(std::string_view op, Activation activation, double negative_slope) {
  const auto a = static_cast<int>(activation);
  REFOLD_CHECK(a >= 0 && a <= static_cast<int>(kLastActivation), "{}: unknown activation ({})", op,
               a);
  if (activation == Activation::LeakyReLU)
    REFOLD_CHECK(std::isfinite(negative_slope), "{}: leaky_relu negative_slope ({}) must be finite",
                 op, negative_slope);
}

bool PostOps::residual_in_steps() const {
  return std::any_of(then.begin(), then.end(), [](const PostStep& s) { return s.add_residual; });
}

std::string PostOps::description() const {
  if (empty()) return "none";
  std::vector<std::string> parts;
  if (residual.defined() && !residual_in_steps()) parts.emplace_back("sum");
  if (activation != Activation::None)
    parts.push_back(activation_description(activation, negative_slope));
  for (const PostStep& step : then) {
    if (!step.scale.empty()) parts.push_back(fmt::format("mul[{}]", step.scale.size()));
    if (!step.shift.empty()) parts.push_back(fmt::format("add[{}]", step.shift.size()));
    if (step.add_residual) parts.emplace_back("sum");
    if (step.activation != Activation::None)
      parts.push_back(activation_description(step.activation, step.negative_slope));
  }
  return fmt::format("{}", fmt::join(parts, "+"));
}

void check_post_ops(std::string_view op, const PostOps& post, const Shape& output_sizes,
                    DType dtype) {
  check_activation(op, post.activation, post.negative_slope);
  // The channels are axis 1 of NCHW: the third axis from the end, as a [C, 1, 1] constant
  // broadcasts.
  const std::int64_t channels =
      output_sizes.size() >= 3 ? output_sizes[output_sizes.size() - 3] : 1;
  int residual_steps = 0;
  for (std::size_t i = 0; i < post.then.size(); ++i) {
    const PostStep& step = post.then[i];
    check_activation(op, step.activation, step.negative_slope);
    check_step_values(op, i, "scale", step.scale, channels);
    check_step_values(op, i, "shift", step.shift, channels);
    residual_steps += step.add_residual ? 1 : 0;
  }
  REFOLD_CHECK(residual_steps <= 1, "{}: {} post-op steps add the residual; at most one may", op,
               residual_steps);
  REFOLD_CHECK(residual_steps == 0 || post.residual.defined(),
               "{}: a post-op step adds the residual, but none is given", op);
  if (!post.residual.defined()) return;
  REFOLD_CHECK(post.residual.sizes() == output_sizes,
               "{}: residual must have the output's sizes [{}], got {}", op,
               fmt::join(output_sizes, ", "), post.residual.description());
  REFOLD_CHECK(post.residual.dtype() == dtype,
               "{}: residual dtype {} does not match input dtype {}", op,
               dtype_name(post.residual.dtype()), dtype_name(dtype));
}

namespace reference {

Tensor apply_activation(const Tensor& x, Activation activation, double negative_slope) {
  switch (activation) {
    case Activation::None:
      return x;
    case Activation::ReLU:
      return relu(x);
    case Activation::ReLU6:
      return relu6(x);
    case Activation::LeakyReLU:
      return leaky_relu(x, negative_slope);
    case Activation::Sigmoid:
      return sigmoid(x);
    case Activation::SiLU:
      return silu(x);
    case Activation::HardSwish:
      return hardswish(x);
    case Activation::HardSigmoid:
      return hardsigmoid(x);
    case Activation::GELU:
      return unary(x, UnaryOp::Gelu, 0.0, 0.0);
    case Activation::GELUTanh:
      return unary(x, UnaryOp::GeluTanh, 0.0, 0.0);
  }
  fail("apply_activation: unknown activation ({})", static_cast<int>(activation));
}

namespace {

// A step's values as a constant that broadcasts per channel: [1] or [C, 1, 1].
Tensor step_operand(const std::vector<float>& values, DType dtype) {
  const Shape sizes =
      values.size() == 1 ? Shape{1} : Shape{static_cast<std::int64_t>(values.size()), 1, 1};
  return from_values(values, sizes).to(dtype);
}

}  // namespace

Tensor apply_post_ops(const Tensor& output, const PostOps& post,
                      const std::function<Tensor(const Tensor&)>& add_residual) {
  const bool late = post.residual_in_steps();
  // reference::add and mul keep their first operand's layout, so the result keeps the op's.
  Tensor y = post.residual.defined() && !late ? add_residual(output) : output;
  y = apply_activation(y, post.activation, post.negative_slope);
  for (const PostStep& step : post.then) {
    if (!step.scale.empty()) y = mul(y, step_operand(step.scale, y.dtype()));
    if (!step.shift.empty()) y = add(y, step_operand(step.shift, y.dtype()));
    if (step.add_residual) y = add_residual(y);
    y = apply_activation(y, step.activation, step.negative_slope);
  }
  return y;
}

Tensor apply_post_ops(const Tensor& output, const PostOps& post) {
  check_post_ops("apply_post_ops", post, output.sizes(), output.dtype());
  return apply_post_ops(output, post, [&](const Tensor& y) { return add(y, post.residual); });
}

}  // namespace reference
}  // namespace refold
