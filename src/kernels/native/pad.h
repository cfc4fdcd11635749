// refold's constant pad for float32 tensors of any rank laid out densely (contiguous, or 4-d
// channels_last): the output keeps the input's layout, and is written row by row in memory
// order. Along each dim, with pads (b, e) (negative values crop):
//
//   out[i] = in[i − b]  where 0 ≤ i − b < size, else value;   out size = size + b + e.
//
// In memory order the output is [rows][inner]: a row whose outer index falls into any dim's
// padding is filled with `value`; any other row is `value` × max(b, 0), one memcpy of the input
// row, `value` × max(e, 0). It needs no AVX2 (memcpy and fill are the fast part). Rows are split
// over threads for large outputs (row_threads.h).
// Same contract as the other native kernels: pads validated with the reference's messages
// (reference::pad), a valid problem it does not take declined (undefined result, `*declined`
// says why: a dtype other than float32, a non-dense layout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "refold/tensor.h"

namespace refold::native {

// pads as reference::pad takes them: (last_begin, last_end, second_last_begin, …).
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value,
           std::string* declined);

}  // namespace refold::native
