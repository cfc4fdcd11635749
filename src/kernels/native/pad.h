// refold's Pad for float32 tensors of any rank laid out densely (contiguous, or 4-d
// channels_last), in every ONNX mode: the output keeps the input's layout and is written row by
// row in memory order. Along each dim, negative pads crop first, then the `kept` elements are
// padded by (b, e) ≥ 0 (reference::onnx_pad's contract):
//
//   out[i] = kept[reference::pad_source(i − b, size, mode)],  or `value` where constant mode
//   finds no source;   out size = kept + b + e.
//
// In memory order the output is [rows][inner]: a row whose outer index maps to no source
// (constant) is filled with `value`; any other row is its border columns (the value, or the
// mirrored, repeated or wrapped elements), one memcpy of the kept input row between them. It needs
// no AVX2 (memcpy and fill are the fast part). Rows are split over threads for large outputs
// (row_threads.h). TResNet's reflect pads of its blur pools ran the reference at 1 GB/s: 12 % of
// the model's time.
// Same contract as the other native kernels: pads the reference reports (a crop below zero,
// reflect/edge/wrap of an empty dim) and valid problems it does not take (a dtype other than
// float32, a non-dense layout) are declined (undefined result, `*declined` says why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/tensor_ops.h"
#include "refold/tensor.h"

namespace refold::native {

// begin/end: one pad per dim (reference::onnx_pad's form).
Tensor onnx_pad(const Tensor& input, const std::vector<std::int64_t>& begin,
                const std::vector<std::int64_t>& end, reference::PadMode mode, float value,
                std::string* declined);

// The constant pad with pads as reference::pad takes them: (last_begin, last_end,
// second_last_begin, …).
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value,
           std::string* declined);

}  // namespace refold::native
