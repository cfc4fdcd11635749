// oneDNN convolution and transposed convolution of ONNX's N-d form (reference::conv_nd and
// conv_transpose_nd: 1–3 spatial axes, per-side pads), on the primitive and weight caches of
// conv2d.h. What the caller must guarantee is conv2d.h's: a contiguous input (N-d tensors other
// than 4-d have only that format), weight and bias of any strides. Arguments are validated as
// the reference validates them; valid arguments oneDNN cannot take (a non-contiguous input, a
// zero-sized dim, bfloat16 without avx512_bf16, a negative begin pad of the transposed conv, no
// oneDNN implementation) are declined: an undefined result and `*declined` says why.
#pragma once

#include <string>

#include "kernels/reference/onnx_ops.h"
#include "refold/tensor.h"

namespace refold::onednn {

Tensor conv_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
               const reference::ConvNdParams& params, std::string* declined);
Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const reference::ConvNdParams& params, std::string* declined);

}  // namespace refold::onednn
