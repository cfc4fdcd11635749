// Reference reductions (ONNX ReduceMean), summed in double and rounded once, any strides.
#include <cmath>
#include <limits>

#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {

// mean over the axes in `axes` (each in [−rank, rank), none repeated):
//   y[i] = (1 / |R|) · Σ_{r ∈ R} x[i ⊕ r]   (R = the reduced axes' index box; |R| = 0 → NaN)
// The output is contiguous: x's sizes with the reduced axes 1 (keepdims) or dropped.
Tensor reduce_mean(const Tensor& input, const std::vector<std::int64_t>& axes, bool keepdims) {
  REFOLD_CHECK(input.defined(), "reduce_mean: input is undefined");
  REFOLD_CHECK(is_floating(input.dtype()),
               "reduce_mean: input has dtype {}; expected float32 or bfloat16",
               dtype_name(input.dtype()));
  const auto rank = static_cast<std::size_t>(input.dim());
  std::vector<bool> reduced(rank, false);
  for (std::int64_t axis : axes) {
    const auto d = static_cast<std::size_t>(detail::wrap_axis(axis, input.dim(), "reduce_mean"));
    REFOLD_CHECK(!reduced[d], "reduce_mean: axis {} is given twice", axis);
    reduced[d] = true;
  }
  // Sums land at the row-major offset of the kept index: reduced axes contribute stride 0.
  Shape kept = input.sizes(), to_sum(rank, 0);
  std::int64_t count = 1, outputs = 1;
  for (std::size_t d = rank; d-- > 0;) {
    if (reduced[d]) {
      count *= kept[d];
      kept[d] = 1;
    } else {
      to_sum[d] = outputs;
      outputs *= kept[d];
    }
  }
  std::vector<double> sums(static_cast<std::size_t>(outputs), 0.0);
  const void* in = input.data_ptr();
  for_each_index(input.sizes(), [&](const Shape& idx) {
    sums[static_cast<std::size_t>(offset_of(idx, to_sum))] +=
        load_as_float(in, input.dtype(), offset_of(idx, input.strides()));
  });
  Shape out_sizes;
  for (std::size_t d = 0; d < rank; ++d)
    if (keepdims || !reduced[d]) out_sizes.push_back(kept[d]);
  Tensor output = empty(out_sizes, input.dtype());
  void* out = output.data_ptr();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::int64_t i = 0; i < outputs; ++i) {
    const double mean = count == 0 ? nan : sums[static_cast<std::size_t>(i)] / count;
    store_from_float(out, input.dtype(), i, round_to_dtype(mean, input.dtype()));
  }
  return output;
}

}  // namespace refold::reference
