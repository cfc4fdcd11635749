// oneDNN reorder: Tensor::contiguous(format) for a 4-d float tensor, i.e. the NCHW ↔ NHWC
// permute of the memory-format seed, as one oneDNN reorder primitive.
//
// Contract:
//   * `input` 4-d, float32 or bfloat16 (a copy: no avx512_bf16 needed), dense in any layout;
//     `format` Contiguous or ChannelsLast. The result is a new tensor contiguous in `format`
//     with the input's values, bit-identical to Tensor::contiguous(format). Unlike
//     Tensor::contiguous it always copies and does not count permute_count().
//   * Anything else (other ranks or dtypes, a strided or zero-sized input, Preserve) is
//     declined (undefined result, reason in *declined; with declined == nullptr it throws).
//   * Primitives are cached keyed by (sizes, input strides, format, dtype, threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/onednn/primitive_stats.h"
#include "refold/memory_format.h"
#include "refold/tensor.h"

namespace refold::onednn {

Tensor reorder(const Tensor& input, MemoryFormat format, std::string* declined = nullptr);

PrimitiveStats reorder_stats();

}  // namespace refold::onednn
