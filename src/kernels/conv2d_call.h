// One conv2d call, validated once: the arguments, the geometry reference::detail::check_conv2d
// derived from them (every argument check of conv2d, PyTorch's messages) and the post-ops
// checked against that output. functional::conv2d validates once and hands the same call to
// each implementation in turn (kernels/dispatch.h); none validates again. The references it
// holds must outlive it: build it where the arguments live and pass it down.
#pragma once

#include "kernels/post_ops.h"
#include "kernels/reference/conv_common.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold {

struct Conv2dCall {
  const Tensor& input;
  const Tensor& weight;
  const Tensor& bias;
  const Conv2dOptions& options;
  const PostOps& post;
  reference::detail::Conv2dGeometry geometry;
};

// Throws refold::Error, "conv2d: …", on any invalid argument or post-op. The call refers to its
// arguments: keep it no longer than they live (a temporary such as `{}` for no post-ops lives
// only to the end of the expression that passed it).
inline Conv2dCall validate_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                  const Conv2dOptions& options, const PostOps& post) {
  const reference::detail::Conv2dGeometry g =
      reference::detail::check_conv2d(input, weight, bias, options);
  check_post_ops("conv2d", post, {g.batch, g.out_channels, g.out_h, g.out_w}, input.dtype());
  return {input, weight, bias, options, post, g};
}

}  // namespace refold
