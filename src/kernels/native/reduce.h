// ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceL1, ReduceL2, ReduceSumSquare and
// ReduceLogSum of float32 data: the fast path of reference::reduce (sums of x, x² or |x| in
// double like it, then reference::reduce_finish, so the same result within Tolerance::op_f32;
// Max and Min exact, NaN winning; tested against it). In memory order, after dropping size-1 dims
// and merging neighbours, X must be [kept][reduced][kept] with either kept block possibly
// empty: contiguous innermost axes (rows summed along), outer axes (rows added up, vectorized
// along them) and a channels_last tensor's H and W (for each n, the HW rows of C channels added
// up). X must be dense (any permutation of a contiguous layout); the output is contiguous, like
// the reference's (kept axes out of logical order in X's memory, as N, H, C when an NHWC tensor
// is reduced over W, are written in X's order and transposed after). Anything else is declined
// with a reason (kernels/dispatch.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "refold/tensor.h"

namespace refold::native {

Tensor reduce(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdims,
              reference::ReduceOp op, std::string* declined);

}  // namespace refold::native
