// refold's own convolution kernel for the convs that dominate re-parameterized networks:
// 3×3, stride 1, dilation 1, groups 1, float32, channels_last (NHWC) activations, any zero
// padding, by Winograd's F(4×4, 3×3) or F(2×2, 3×3) (the math: winograd_tiles.h): 4× or 2.25×
// fewer multiply-adds than the direct conv. The result differs from it by rounding only (|Δ| ≈
// 1e-6 relative for unit-scale data with 2×2 tiles, ≈ 1e-5 with 4×4), within docs/testing.md's
// fp32 tolerance.
//
// Same contract as onednn::conv2d (kernels/onednn/conv2d.h): arguments are validated with the
// reference's messages; a valid problem this kernel does not take is *declined* — an undefined
// result and `*declined` says why (another shape or layout, a channel count that is not a
// multiple of 8, too few channels for the transforms to pay off, no AVX2/FMA,
// REFOLD_CONV_ALGORITHM=direct, ...).
//
// Transformed weights (U = G g Gᵀ, α²/9 of the weight's size) are cached (weight_cache.h). Per
// call, the work runs in chunks of tiles, each in three parallel steps (get_num_threads()
// threads): input transform, α² matrix products, output transform with bias, residual and
// activation fused. The chunk's scratch (≈ 2 MiB at most) belongs to the calling thread and is
// reused from call to call; it is not tensor memory (memory_stats(), the memory limit).
#pragma once

#include <string>

#include "kernels/conv2d_call.h"
#include "kernels/native/cpu.h"
#include "kernels/native/winograd_tiles.h"
#include "kernels/post_ops.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::native {

// The tile for `batch` outputs of out_h × out_w: the one with the lower cost per (i, o),
// α²·(tiles + the weight read), tiles = batch·⌈out_h / m⌉·⌈out_w / m⌉ and the read of U_ξ
// counted as 16 tiles' matrix products (winograd_conv2d.cpp). The 4×4 tile does 1.78× fewer
// multiply-adds on large outputs, but its U is 2.25× larger: at batch 1 it pays from 28×28 up.
WinogradTile winograd_tile(std::int64_t batch, std::int64_t out_h, std::int64_t out_w);

// The channel rule: whether `tile` on conv `g` beats oneDNN's direct conv on a CPU whose
// vector_isa() is `isa` (the thresholds and their measurements: winograd_conv2d.cpp). With
// isa = vector_isa() it is what winograd_conv2d applies.
bool winograd_has_enough_channels(WinogradTile tile, const reference::detail::Conv2dGeometry& g,
                                  VectorIsa isa);

// y = post.activation(conv2d(input, weight) + bias + post.residual), or declined (see above),
// with winograd_tile()'s tile or the one given.
Tensor winograd_conv2d(const Conv2dCall& call, std::string* declined);
Tensor winograd_conv2d(const Conv2dCall& call, WinogradTile tile, std::string* declined);

// The same on arguments not yet validated (tests, benchmarks): validate_conv2d, then the kernel.
inline Tensor winograd_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const Conv2dOptions& options, const PostOps& post,
                              std::string* declined) {
  return winograd_conv2d(validate_conv2d(input, weight, bias, options, post), declined);
}

}  // namespace refold::native
