// Reference ONNX QuantizeLinear / DequantizeLinear (kernels in logic_ops.cpp, beside cast).
// Integer tensors are int64 (refold/dtype.h): the quantized side is int64 holding the values
// of the ONNX integer type, whose range the caller passes to quantize_linear.
#pragma once

#include <cstdint>

#include "refold/tensor.h"

namespace refold::reference {

// Which element of scale (and zero point) each element of x uses. axis < 0: per-tensor (scale
// has one element); block_size == 0: per-axis (scale is 1-d of x.size(axis)); else blocked
// (scale has x's rank, ceil(x.size(axis) / block_size) along axis and x's sizes elsewhere;
// x[…, i, …] uses scale[…, i / block_size, …]). zero_point, when defined, has scale's shape.
struct QuantAxis {
  std::int64_t axis = -1;  // normalized to [0, x.dim()); -1 for per-tensor
  std::int64_t block_size = 0;
};

// QuantizeLinear: y = clamp(round_half_to_even(x / scale) + zero_point, lo, hi), int64.
// x / scale is divided in float32 (as ONNX's reference implementation and ONNX Runtime do, so
// ties such as 2.5 round alike); NaN quantizes to the zero point. zero_point may be undefined
// (0) and is int64; x and scale are float32/bfloat16.
Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                       const QuantAxis& axis, std::int64_t lo, std::int64_t hi);

// DequantizeLinear: y = (x − zero_point) · scale in scale's dtype (x and zero_point int64;
// zero_point may be undefined: 0). x − zero_point is exact, the product rounded once.
Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                         const QuantAxis& axis);

}  // namespace refold::reference
