// Adaptive average pooling of float32 [N, C, H, W] (or [C, H, W]) dense in NCHW or NHWC: the
// fast path of reference::adaptive_avg_pool2d (same arguments, same output: the input's format).
// Output (oh, ow) of O reduces the window [⌊i·I / O⌋, ⌈(i + 1)·I / O⌉) of each axis:
//   out[n, c, oh, ow] = (Σ_{h ∈ rows} Σ_{w ∈ cols} in[n, c, h, w]) / (|rows|·|cols|)
// (GlobalMaxPool runs native::reduce, native/reduce.h.)
// 1×1 average is global average pooling (squeeze-excite blocks, classifier heads). NHWC reduces
// 32 channels of a pixel per step (4 AVX2 vectors, contiguous); NCHW each window's rows of a
// plane (one contiguous span when the window spans whole rows). Sums are float32 per row (NHWC)
// or per chunk of 512 elements (NCHW), then totalled, so the rounding error grows with the
// window's side, not its area; the reference sums in double: equal within Tolerance::op_f32.
//
// The arguments are validated as the reference validates them (same messages); declined with a
// reason (kernels/dispatch.h): no AVX2/FMA, not float32, other strides, an empty batch, an
// output size that is not positive.
#pragma once

#include <string>

#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::native {

Tensor adaptive_avg_pool2d(const Tensor& input, Size2d output_size, std::string* declined);

}  // namespace refold::native
