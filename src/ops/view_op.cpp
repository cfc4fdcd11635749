// ops::ViewOp's shared helpers (view_op.h).
#include "ops/view_op.h"

#include <algorithm>

#include "kernels/verbose.h"
#include "refold/functional.h"

namespace refold::ops {

std::vector<Tensor> ViewOp::logged(const std::vector<Tensor>& inputs, bool views) const {
  const std::uint64_t dispatched = dispatch_count();
  std::vector<Tensor> outputs = moved(inputs, views);
  // A kernel it called (a permute by oneDNN, native::split) has named itself; else it made
  // views or copied with Tensor::copy_.
  if (dispatch_count() == dispatched) {
    const bool all_views = std::all_of(outputs.begin(), outputs.end(), [&](const Tensor& y) {
      return std::any_of(inputs.begin(), inputs.end(),
                         [&](const Tensor& x) { return y.shares_storage(x); });
    });
    log_dispatch(type_name(), all_views ? "view" : "copy");
  }
  return outputs;
}

Tensor with_format_strides(const Tensor& dense) {
  const Shape strides = dense.is_contiguous() ? contiguous_strides(dense.sizes())
                                              : channels_last_strides(dense.sizes());
  return dense.strides() == strides
             ? dense
             : dense.as_strided(dense.sizes(), strides, dense.storage_offset());
}

Tensor reshaped(const Tensor& x, const Shape& sizes, bool views) {
  if (views) {
    if (Tensor v = x.view(sizes); v.defined()) return v;
  }
  return functional::to_format(x, MemoryFormat::Contiguous).reshape(sizes);
}

}  // namespace refold::ops
