// Softmax and LogSoftmax of float32 data along one axis (opset ≥ 13), or, `coerce_2d`, over
// every dim from `axis` on (the opset < 13 form): the fast path of reference::softmax and
// reference::softmax_coerced_2d (the same result within Tolerance::op_f32; tested against them),
// with exp from the vectorized approximation of kernels/native/vector_math.h. Takes X contiguous
// or 4-d channels_last (the per-axis form), and writes the reference's output layout. In memory
// order X is [outer][count][inner] around the softmax axis: inner = 1 (the axis is innermost)
// reduces along contiguous rows, inner > 1 vectorizes across the inner dims. Hardmax and anything
// else are declined with a reason (kernels/dispatch.h).
//
// With an addend c (attention's position bias or mask before its softmax), softmax(x + c) in the
// same pass: c row-major float32, broadcast to X without enlarging it, its last dim X's (the rows
// of c are read per row of X, no sum tensor is made); X contiguous and the softmax along its last
// axis. Anything else with an addend is declined (the caller adds first).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/reference/tensor_ops.h"
#include "refold/tensor.h"

namespace refold::native {

// addend: undefined for the plain softmax.
Tensor softmax(const Tensor& x, const Tensor& addend, std::int64_t axis,
               reference::SoftmaxKind kind, bool coerce_2d, std::string* declined);

}  // namespace refold::native
