// refold's own direct convolution for channels_last float32 activations: any kernel size,
// stride, dilation and zero padding, groups of a multiple of 8 outputs each — matrix products on
// the micro-kernel (micro_kernel.h) without an im2col copy. Each output pixel p = (n, oy, ox) is a
// row, each kernel tap (ky, kx) a pointer into the input, each input channel a k:
//
//   y[p][o] = Σ_{ky,kx} Σ_i x[n][oy·sh − pt + ky·dh][ox·sw − pl + kx·dw][i] · w[o][i][ky][kx]
//
// A tap that falls into the padding points at a row of zeros, so nothing is copied. Weights are
// packed once into [16-channel block][tap][C_in][16] panels (weight_cache.h); per call, one
// parallel loop over (block, 6-pixel panel) jobs, block-major so that a thread's consecutive
// jobs reuse one weight panel from cache; bias, residual and activation fused into the store.
//
// A panel leaves out the taps that read padding for all its pixels, and where whole taps read
// padding for many pixels (a dilated conv on a small map) each output row is cut where the set
// of taps that read the input changes, so no panel multiplies a tap that reads only padding.
//
// It exists for the convs oneDNN 2.6's NHWC kernel is slow at on AVX2 machines: it takes
// strided convs (stride ≥ 2 on either axis), dilated ones (oneDNN's im2col + GEMM multiplies
// every padded tap) and grouped ones of 8 outputs per group (one oneDNN 8-channel block per
// group); stride-1 3×3 convs go to Winograd (winograd_conv2d.h), the rest to oneDNN
// (docs/native-kernels.md has the measurements).
// Same contract as onednn::conv2d: arguments validated with the reference's messages; a valid
// problem it does not take is declined (undefined result, `*declined` says why).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/conv2d_call.h"
#include "kernels/post_ops.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::native {

// y = post.activation(conv2d(input, weight) + bias + post.residual), or declined (see above).
Tensor direct_conv2d(const Conv2dCall& call, std::string* declined);

// The same on arguments not yet validated (tests, benchmarks): validate_conv2d, then the kernel.
inline Tensor direct_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                            const Conv2dOptions& options, const PostOps& post,
                            std::string* declined) {
  return direct_conv2d(validate_conv2d(input, weight, bias, options, post), declined);
}

namespace detail {
// The panel × tap products the kernel plans for a call (one product: a panel of up to six pixels
// times one kernel tap, over every input and output channel), at most ⌈pixels / 6⌉ · kh · kw;
// fewer where it leaves out taps that read padding (a dilated conv on a small map).
std::int64_t direct_conv2d_tap_products(const Conv2dCall& call);
}  // namespace detail

}  // namespace refold::native
