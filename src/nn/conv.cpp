#include "refold/nn/conv.h"

#include <cmath>

#include "core/check.h"
#include "core/checked_math.h"
#include "kernels/post_ops.h"
#include "nn/init.h"
#include "refold/error.h"
#include "refold/functional.h"

namespace refold::nn {

namespace {

// Checks shared by Conv2d and ConvTranspose2d (PyTorch's _ConvNd.__init__, plus the positivity
// checks PyTorch leaves to the kernel, so a bad module fails when built, not when first run).
void check_common(const std::string& type, std::int64_t in_channels, std::int64_t out_channels,
                  Size2d kernel, Size2d stride, Size2d dilation, std::int64_t groups) {
  REFOLD_CHECK(in_channels > 0, "{}: in_channels ({}) must be positive", type, in_channels);
  REFOLD_CHECK(out_channels > 0, "{}: out_channels ({}) must be positive", type, out_channels);
  REFOLD_CHECK(kernel.h > 0 && kernel.w > 0, "{}: kernel_size ({}, {}) must be positive", type,
               kernel.h, kernel.w);
  REFOLD_CHECK(stride.h > 0 && stride.w > 0, "{}: stride ({}, {}) must be positive", type, stride.h,
               stride.w);
  REFOLD_CHECK(dilation.h > 0 && dilation.w > 0, "{}: dilation ({}, {}) must be positive", type,
               dilation.h, dilation.w);
  REFOLD_CHECK(groups > 0, "{}: groups ({}) must be positive", type, groups);
  REFOLD_CHECK(in_channels % groups == 0, "{}: groups ({}) must divide in_channels ({})", type,
               groups, in_channels);
  REFOLD_CHECK(out_channels % groups == 0, "{}: groups ({}) must divide out_channels ({})", type,
               groups, out_channels);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Conv2d

Conv2d::Conv2d(const Conv2dOptions& options) : Conv2d("Conv2d", options) {}

Conv2d::Conv2d(const Conv2dOptions& options, Tensor weight, Tensor bias)
    : Conv2d("Conv2d", options, std::move(weight), std::move(bias)) {}

Conv2d::Conv2d(std::string type_name, const Conv2dOptions& options, Tensor weight, Tensor bias)
    : Module(std::move(type_name)), options_(options) {
  const auto& o = options_;
  check_common(this->type_name(), o.in_channels(), o.out_channels(), o.kernel_size(), o.stride(),
               o.dilation(), o.groups());
  const Padding2d& padding = o.padding();
  if (padding.mode() == Padding2d::Mode::Explicit) {
    const Pads2d& p = padding.explicit_pads();
    REFOLD_CHECK(p.top >= 0 && p.left >= 0 && p.bottom >= 0 && p.right >= 0,
                 "{}: padding (top {}, left {}, bottom {}, right {}) must be non-negative",
                 this->type_name(), p.top, p.left, p.bottom, p.right);
  }
  // PyTorch: "padding='same' is not supported for strided convolutions" — with stride > 1
  // no single padding keeps the size.
  REFOLD_CHECK(padding.mode() != Padding2d::Mode::Same || (o.stride() == Size2d(1)),
               "{}: padding 'same' needs stride 1, got stride ({}, {})", this->type_name(),
               o.stride().h, o.stride().w);

  detail::weight_and_bias(
      this->type_name(),
      {o.out_channels(), o.in_channels() / o.groups(), o.kernel_size().h, o.kernel_size().w},
      o.out_channels(), o.bias(), weight, bias);
  weight_ = register_parameter("weight", weight);
  if (bias.defined()) bias_ = register_parameter("bias", bias);
}

Tensor Conv2d::forward(const Tensor& input) {
  return functional::conv2d(input, weight_, bias_, options_.op_options(), post_);
}

Tensor Conv2d::forward_with_residual(const Tensor& input, const Tensor& residual,
                                     bool overwrite_residual) {
  REFOLD_CHECK(residual.defined(), "{}: forward_with_residual given an undefined residual",
               type_name());
  PostOps post = post_;
  post.residual = residual;
  post.overwrite_residual = overwrite_residual;
  try {
    return functional::conv2d(input, weight_, bias_, options_.op_options(), post);
  } catch (const Error& e) {
    // forward() gets its module path from Module::operator(); this entry point, called
    // directly, names at least the module's type.
    throw e.with_context(type_name());
  }
}

void Conv2d::set_activation(Activation activation, double negative_slope) {
  check_activation(type_name(), activation, negative_slope);
  post_.activation = activation;
  post_.negative_slope = negative_slope;
}

void Conv2d::set_post_ops(const PostOps& post) {
  REFOLD_CHECK(!post.residual.defined(),
               "{}: set_post_ops given a residual; forward_with_residual takes it per call",
               type_name());
  // Checked as the conv will check them, on an output of this module's channels, with a
  // stand-in for the residual forward_with_residual gives when a step adds it; nothing changes
  // unless all of it is valid.
  const Shape output = {1, options_.out_channels(), 1, 1};
  PostOps checked = post;
  if (post.residual_in_steps()) checked.residual = zeros(output);
  check_post_ops(type_name(), checked, output, DType::Float32);
  set_activation(post.activation, post.negative_slope);
  post_.then = post.then;
}

// ---------------------------------------------------------------------------------------------
// ConvTranspose2d

ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dOptions& options)
    : ConvTranspose2d("ConvTranspose2d", options) {}

ConvTranspose2d::ConvTranspose2d(const ConvTranspose2dOptions& options, Tensor weight, Tensor bias)
    : ConvTranspose2d("ConvTranspose2d", options, std::move(weight), std::move(bias)) {}

ConvTranspose2d::ConvTranspose2d(std::string type_name, const ConvTranspose2dOptions& options,
                                 Tensor weight, Tensor bias)
    : Module(std::move(type_name)), options_(options) {
  const auto& o = options_;
  check_common(this->type_name(), o.in_channels(), o.out_channels(), o.kernel_size(), o.stride(),
               o.dilation(), o.groups());
  REFOLD_CHECK(o.padding().h >= 0 && o.padding().w >= 0,
               "{}: padding ({}, {}) must be non-negative", this->type_name(), o.padding().h,
               o.padding().w);
  // The transposed conv's output size is ambiguous by up to stride − 1 rows/columns;
  // output_padding picks one, so it must stay below the stride (or the dilation).
  const Size2d op = o.output_padding();
  REFOLD_CHECK(op.h >= 0 && op.w >= 0, "{}: output_padding ({}, {}) must be non-negative",
               this->type_name(), op.h, op.w);
  REFOLD_CHECK((op.h < o.stride().h || op.h < o.dilation().h) &&
                   (op.w < o.stride().w || op.w < o.dilation().w),
               "{}: output_padding ({}, {}) must be smaller than either stride ({}, {}) or "
               "dilation ({}, {})",
               this->type_name(), op.h, op.w, o.stride().h, o.stride().w, o.dilation().h,
               o.dilation().w);

  detail::weight_and_bias(
      this->type_name(),
      {o.in_channels(), o.out_channels() / o.groups(), o.kernel_size().h, o.kernel_size().w},
      o.out_channels(), o.bias(), weight, bias);
  weight_ = register_parameter("weight", weight);
  if (bias.defined()) bias_ = register_parameter("bias", bias);
}

Tensor ConvTranspose2d::forward(const Tensor& input) {
  return functional::conv_transpose2d(input, weight_, bias_, options_.op_options());
}

}  // namespace refold::nn
