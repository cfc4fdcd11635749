// y = min(max(a·x + b, lo), hi), element by element over float32: ONNX's Clip with any bounds
// (a = 1, b = 0; an absent bound ±∞) and HardSigmoid with any alpha and beta (a, b, [0, 1]) —
// the forms that are not a conv's post-op (Clip(0, 6) is ReLU6 and runs oneDNN's eltwise), e.g.
// hardtanh, clamp(min = ε) before a division, Keras' HardSigmoid (0.2, 0.5). The reference
// walked them one index at a time: a Clip of 800 K values took 10 ms, a Relu 0.05.
//
// x in any dense layout (NCHW, NHWC, a permuted view that is dense), the output in the same
// strides; 8 values per AVX2 vector, refold's threads above kernels/native/row_threads.h's size.
// NaN passes through as in the reference (max(lo, NaN) and min(hi, NaN) are NaN: the vector
// max/min return their second operand when either is NaN); with a = 1 and b = 0 x is not
// multiplied, so −0 stays −0. a·x + b is one fused multiply-add in float32; the reference
// rounds the double result: within one ulp.
//
// Declined with a reason (kernels/dispatch.h): no AVX2/FMA, not float32 (int64 Clip, bfloat16),
// strides that are not dense; `op` names the caller in the messages.
#pragma once

#include <string>

#include "refold/tensor.h"

namespace refold::native {

Tensor clamp(const char* op, const Tensor& x, float a, float b, float lo, float hi,
             std::string* declined);

}  // namespace refold::native
