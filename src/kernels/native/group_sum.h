// y[n, c, h, w] = Σ_k x[n, k·C + c, h, w] · a[n, k, c], k < r: the sum of the r channel groups of
// x, each channel weighted by `a` or not — split attention (ResNeSt, SKNet) as exporters write it,
// ReduceSum(Reshape(x, [N, r, C, H, W]), axis 1) and ReduceSum(Mul(Reshape(x, …), a), axis 1)
// (canonicalize's GroupSum node, passes/group_sum.h). The products and the sum in float32, k
// ascending: the result of the two or three ops within Tolerance::op_f32 (tested against them).
//
// X float32 4-d [N, r·C, H, W], contiguous or channels_last; y [N, C, H, W] in X's format: read
// once and written once, with no 5-d copy of X in NCHW order between. `a`, when defined, float32
// with r·C values per n in (k, c) order for each of N or 1 n (a [N|1, r, C, 1, 1] tensor, any
// strides). Anything else is declined with a reason (kernels/dispatch.h).
#pragma once

#include <cstdint>
#include <string>

#include "refold/tensor.h"

namespace refold::native {

Tensor group_sum(const Tensor& x, const Tensor& a, std::int64_t groups, std::string* declined);

}  // namespace refold::native
