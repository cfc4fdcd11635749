// Add, Sub, Mul and Div of float32 tensors where one operand broadcasts in a pattern oneDNN's
// binary primitive has only its reference implementation for (it ran 25 K elements in 1.8 ms,
// 0.1 GB/s): EfficientViT's linear attention divides each row of [B, heads, N, d] by its own
// scalar, [B, heads, N, 1]. The operand with the output's shape, x, sets the output's strides
// (as onednn::binary, kernels/onednn/binary.h); the other, v, may come first in a Sub or Div
// (y = v − x). In x's memory order the innermost dims merge into rows that v reads along (its
// stride 1 there), as one value (stride 0) or gathered (any other stride: an NHWC x times an
// NCHW per-channel-and-row v); each thread takes one contiguous range of the elements (a long row
// split between threads). Where neither operand has the output's shape (both broadcast, an
// outer product), a is expanded to it first, contiguous, and becomes x. 8 lanes (AVX2). Declined
// (kernels/dispatch.h): not float32, x not dense, a negative or huge stride of v along the
// rows, no AVX2/FMA.
#pragma once

#include <string>

#include "refold/tensor.h"

namespace refold::native {

enum class BinaryKind { Add, Sub, Mul, Div };

Tensor broadcast_binary(BinaryKind op, const Tensor& a, const Tensor& b, std::string* declined);

}  // namespace refold::native
