// GridSample of a 4-d float32 X, nearest or linear, any padding and align_corners: the fast path
// of reference::grid_sample (same arguments). Per output point the neighbours and weights are
// found once (reference::detail::grid_axis_taps, the reference's own coordinate rule, weights
// rounded to float), then
//   y[n, c, o] = Σ_t w[n, o, t] · x[n, c, offset[n, o, t]]   (t < 1 or 4; a neighbour in the
//                                                              zero padding left out)
// in float32 (the reference: double, rounded once). From 8 channels on, X is first laid out as
// [N][H·W][C], so each tap blends a row of C channels in vectors, and jobs of 256 points go to
// the threads (the result transposed back to [N, C, Ho, Wo]); below, each channel plane is read
// through the taps, planes split between threads. Deformable attention samples this way:
// RT-DETR's decoder has 18 GridSamples of 32 channels a head, 28.4 ms of its 143 on the
// reference, 6.4 ms here (Xeon model 207, 2 threads; [8, 32, 40, 40] at [8, 300, 4] points:
// 0.36 ms, of which finding the taps ≈ 15 ns a point and the two transposes 0.11 ms).
// Takes: X [N, C, H, W] dense NCHW and grid [N, Ho, Wo, 2] float32 (any strides: copied when not
// dense), mode nearest or linear. Declines the rest (cubic, other ranks and dtypes) with a
// reason; the reference runs them.
#pragma once

#include <string>

#include "kernels/reference/tensor_ops.h"
#include "refold/tensor.h"

namespace refold::native {

Tensor grid_sample(const Tensor& input, const Tensor& grid, const reference::GridSampleParams& p,
                   std::string* declined);

}  // namespace refold::native
