// refold's Gather copy: data dense in logical (row-major) order, viewed as [outer, size, inner]
// around the gathered axis, gives out[o, j, :] = data[o, index[j], :] — one memcpy of `inner`
// elements per (o, j), rows split over threads for large outputs (row_threads.h), any dtype (a
// byte copy). The reference (kernels/reference/tensor_ops.h) reads element by element; at the
// 0.8 GB/s it reached on ConViT's attention, its Gathers took 46 % of the model's time.
// Indices that step evenly upward never get here: ops::Gather takes them as a strided slice
// (a view, or one copy). Declines data that is not dense in logical order (ops::Gather makes it
// so first).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "refold/tensor.h"

namespace refold::native {

// `index`: checked and in [0, data.size(axis)) (reference::gather_indices); `out_sizes`:
// data.sizes[:axis] + indices' sizes + data.sizes[axis+1:].
Tensor gather(const Tensor& data, std::span<const std::int64_t> index, std::int64_t axis,
              const Shape& out_sizes, std::string* declined);

}  // namespace refold::native
