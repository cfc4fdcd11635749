// The reference's one element-wise loop: y = f(x) in double over every logical index, rounded
// once to the dtype, for any strides (activations.cpp, unary.cpp).
#pragma once

#include "core/element_access.h"
#include "refold/tensor.h"

namespace refold::reference::detail {

// A float32/bfloat16 tensor of x's sizes, dtype and layout holding f(x) elementwise.
template <typename F>
Tensor map_floating(const Tensor& x, F&& f) {
  Tensor output = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  const FloatReader in(x);
  const FloatWriter out(output);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const double y = f(static_cast<double>(in.at_offset(offset_of(idx, in.strides()))));
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(y, x.dtype()));
  });
  return output;
}

}  // namespace refold::reference::detail
