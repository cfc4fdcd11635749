// refold's own convolution kernel for the convs that dominate re-parameterized networks:
// 3×3, stride 1, dilation 1, groups 1, float32, channels_last (NHWC) activations, any zero
// padding, by Winograd's F(2×2, 3×3) (the math: tiles.h). 2.25× fewer multiply-adds than the
// direct conv; the result differs from it by rounding only (|Δ| ≈ 1e-6 relative for unit-scale
// data), within docs/testing.md's fp32 tolerance.
//
// Same contract as onednn::conv2d (kernels/onednn/conv2d.h): arguments are validated with the
// reference's messages; a valid problem this kernel does not take is *declined* — an undefined
// result and `*declined` says why (another shape or layout, a channel count that is not a
// multiple of 8, too few channels for the transforms to pay off, no AVX2/FMA,
// REFOLD_CONV_ALGORITHM=direct, ...).
//
// Transformed weights (U = G g Gᵀ, 16/9 of the weight's size) are cached (weight_cache.h). Per
// call, the work runs in chunks of tiles, each in three parallel
// steps (get_num_threads() threads): input transform, 16 matrix products, output transform with
// bias, residual and activation fused.
#pragma once

#include <string>

#include "kernels/conv2d_call.h"
#include "kernels/post_ops.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::native {

// y = post.activation(conv2d(input, weight) + bias + post.residual), or declined (see above).
Tensor winograd_conv2d(const Conv2dCall& call, std::string* declined);

// The same on arguments not yet validated (tests, benchmarks): validate_conv2d, then the kernel.
inline Tensor winograd_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Conv2dOptions& options, const PostOps& post,
                              std::string* declined) {
  return winograd_conv2d(validate_conv2d(input, weight, bias, options, post), declined);
}

}  // namespace refold::native
