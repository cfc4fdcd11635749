// Resize of a 4-d float32 tensor over H and W, nearest, linear (bilinear) or cubic: the fast path
// of reference::resize (same arguments), for inputs dense in NCHW or NHWC (the format the input
// suggests; the output is in that format, as the reference makes it).
//
// The taps are separable, so per output row and per output column the source indices and
// weights are computed once (reference::detail::resize_taps, resize_filter_taps: the reference's
// own coordinate mapping and weights, rounded to float), then
//   out[n, c, y, x] = Σ_a Σ_b wy_a[y] · wx_b[x] · in[n, c, iy_a[y], ix_b[x]]
// over a, b < 2 taps (nearest, linear) or 4 (cubic: Keys' kernel, CrossViT's 240 → 224 branch,
// 20.1 → 0.28 ms against the reference) is computed in two passes per output row: the input
// rows blended vertically into a row of W_in (× C) floats, then each output column blended from
// that row. NHWC vectorizes over the channels of a pixel (contiguous), NCHW over the output
// columns (gathers). Linear and cubic compute in float32 (the reference: double, rounded once):
// equal within float rounding (Tolerance::op_f32). A zero weight is skipped, as in the reference,
// so an Inf/NaN neighbour it would multiply stays out; nearest, and linear landing on input
// samples, copy elements bit for bit. An output row whose taps equal the previous row's is a copy
// of it.
//
// Declined with a reason (kernels/dispatch.h): no AVX2/FMA, not 4-d, not float32,
// a resize that changes or moves N or C (their taps are not the identity), other strides, an
// empty tensor, and arguments the reference rejects (it reports them).
#pragma once

#include <string>
#include <vector>

#include "kernels/reference/tensor_ops.h"
#include "refold/tensor.h"

namespace refold::native {

Tensor resize2d(const Tensor& input, const Shape& out_sizes, const std::vector<double>& scales,
                const std::vector<double>& lengths, const reference::ResizeParams& params,
                std::string* declined);

}  // namespace refold::native
