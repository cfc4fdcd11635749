// bfloat16 through a float32-only native kernel (elementwise chains, concat chains, LayerNorm
// rows): the inputs are widened once and the output is rounded once, the same arithmetic the
// reference does in float32 per element — two passes over memory where the reference reads
// each element through its index (0.1 GB/s: DenseNet-121's BN→ReLU chains took 365 ms of a
// 377 ms bf16 run, bench/RESULTS.md).
#pragma once

#include "refold/tensor.h"

namespace refold::native {

// `t` in float32 (t itself when it is not bfloat16, or undefined).
inline Tensor widened(const Tensor& t) {
  return t.defined() && t.dtype() == DType::BFloat16 ? t.to(DType::Float32) : t;
}

// `y` (a float32 kernel's result, or undefined when it declined) back in bfloat16.
inline Tensor rounded(const Tensor& y) { return y.defined() ? y.to(DType::BFloat16) : y; }

}  // namespace refold::native
