// oneDNN max and average 2-d pooling — the reference's max_pool2d / avg_pool2d
// (refold/reference.h), run by oneDNN's pooling_v2 primitive (dilation for max pooling).
//
// Contract (the same as conv2d.h's):
//   * input [N, C, H, W] contiguous in the format it suggests (NCHW or NHWC), or [C, H, W]
//     contiguous; the output is in that format, as the reference makes it. Any other strides
//     are declined (no hidden permutes).
//   * Arguments are validated as the reference validates them, with the same refold::Error
//     messages (dtype, rank, kernel, stride, padding, dilation, output size, divisor_override).
//   * PyTorch's ceil_mode becomes a larger right/bottom padding: the one that makes oneDNN's
//     floor formula give the reference's output size,
//       pad_r = max(pad, (out − 1)·stride + (k − 1)·dilation + 1 − in − pad).
//     Max pooling skips padded taps (−inf), as the reference does. Average pooling divides by
//     the elements inside the input (count_include_pad = false: pooling_avg_exclude_padding) or
//     by kh·kw (count_include_pad = true: pooling_avg_include_padding), which is PyTorch's
//     divisor only while no window overhangs the right padding — so include-padding average
//     pooling whose ceil_mode adds padding, and any divisor_override, are declined.
//   * Other declines: an empty batch, bfloat16 without avx512_bf16, no oneDNN implementation.
//     With declined == nullptr a decline throws refold::Error.
//   * Primitives are cached (process-wide, thread-safe, least recently used) keyed by
//     (algorithm, dtype, layout, sizes, window, threads).
// NaN (a known difference, pinned by OnednnOps.PoolingNaN): oneDNN's max skips a NaN, where
// the reference and PyTorch let it win the window.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/onednn/primitive_stats.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::onednn {

Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options,
                  std::string* declined = nullptr);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options,
                  std::string* declined = nullptr);

PrimitiveStats pooling_stats();
// Drops every cached primitive and zeroes the counters.
void clear_pooling_cache();

}  // namespace refold::onednn
