// y = x / max(‖x‖₂, ε) along one axis, each vector of X along the axis scaled to unit length
// (ε keeps a zero vector finite; ε = 0 is the plain x / ‖x‖): F.normalize, as exporters write it
// (ReduceL2 → Clip(min ε) → Div, canonicalize's L2Normalize node, passes/l2_normalize.h) — XCiT's
// cross-covariance attention normalizes q and k over the tokens, Swin-V2 and cosine classifiers
// over the features. The norm is summed as float_sums.h sums and rounded once, as ReduceL2;
// the quotient is float32's own, so the result is that of the three ops within
// Tolerance::op_f32 (tested against them).
//
// X float32 with any positive strides: a view (q or k picked out of a fused qkv product, the
// tokens 3·C floats apart) is read where it lies, not copied first. In X's memory order the dims
// below the axis must form one contiguous run (the kept dims summed across, vectorized along
// the run), or none, with the axis itself contiguous (rows summed along); the dims above the axis
// may lie anywhere. The output is dense in X's memory order (a contiguous X gives a contiguous
// output, a channels_last one a channels_last output, XCiT's view [B, h, d, N] with N outermost
// a [B, N, h, d] layout). Anything else is declined with a reason (kernels/dispatch.h).
#pragma once

#include <cstdint>
#include <string>

#include "refold/tensor.h"

namespace refold::native {

Tensor l2_normalize(const Tensor& x, std::int64_t axis, float epsilon, std::string* declined);

}  // namespace refold::native
