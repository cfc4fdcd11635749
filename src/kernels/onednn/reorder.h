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
//   * Primitives are cached keyed by (sizes, input strides, output strides, dtype, threads).
//
// reorder_into: the same copy into a tensor the caller holds — `dst` with the input's sizes
// and dtype and any strides (a slice of a larger tensor: a concat's place for one input), from
// an input with any strides (a permuted or sliced view). Ranks 1 to oneDNN's 12, float32 or
// bfloat16, no zero-sized dim, dst not overlapping itself (the caller's promise). Returns false
// where it declines (the reason in *declined; with declined == nullptr it throws), dst untouched.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/onednn/primitive_stats.h"
#include "refold/memory_format.h"
#include "refold/tensor.h"

namespace refold::onednn {

Tensor reorder(const Tensor& input, MemoryFormat format, std::string* declined = nullptr);
bool reorder_into(const Tensor& input, Tensor& dst, std::string* declined = nullptr);

PrimitiveStats reorder_stats();

}  // namespace refold::onednn
