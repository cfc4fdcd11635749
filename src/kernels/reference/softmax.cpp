// Reference softmax (ONNX Softmax, both definitions), computed in double and rounded once.
#include <cmath>
#include <limits>
#include <span>

#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace {

void check_floating(const Tensor& input, const char* op) {
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  REFOLD_CHECK(is_floating(input.dtype()), "{}: input has dtype {}; expected float32 or bfloat16",
               op, dtype_name(input.dtype()));
}

// The `count` elements at in + k·in_stride (k < count), written to out + k·out_stride:
//   Softmax     y_k = exp(x_k − m) / Σ_j exp(x_j − m),  m = max_j x_j  (subtracting m keeps
//               exp ≤ 1); an all −inf row gives NaN, as exp(−inf − (−inf)) does in numpy.
//   LogSoftmax  y_k = x_k − m − log Σ_j exp(x_j − m)
//   Hardmax     y_k = 1 at the first k with x_k = m, else 0
void softmax_row(SoftmaxKind kind, const void* in, std::int64_t in_offset, std::int64_t in_stride,
                 DType dtype, void* out, std::int64_t out_offset, std::int64_t out_stride,
                 std::int64_t count, std::vector<double>& scratch) {
  scratch.resize(static_cast<std::size_t>(count));
  double m = -std::numeric_limits<double>::infinity();
  for (std::int64_t k = 0; k < count; ++k) {
    scratch[static_cast<std::size_t>(k)] = load_as_float(in, dtype, in_offset + k * in_stride);
    m = std::max(m, scratch[static_cast<std::size_t>(k)]);
  }
  if (kind == SoftmaxKind::Hardmax) {
    bool found = false;
    for (std::int64_t k = 0; k < count; ++k) {
      const bool first_max = !found && scratch[static_cast<std::size_t>(k)] == m;
      found = found || first_max;
      store_from_float(out, dtype, out_offset + k * out_stride, first_max ? 1.0f : 0.0f);
    }
    return;
  }
  double sum = 0;
  for (const double v : scratch) sum += std::exp(v - m);
  for (std::int64_t k = 0; k < count; ++k) {
    const double x = scratch[static_cast<std::size_t>(k)];
    const double y =
        kind == SoftmaxKind::LogSoftmax ? x - m - std::log(sum) : std::exp(x - m) / sum;
    store_from_float(out, dtype, out_offset + k * out_stride, round_to_dtype(y, dtype));
  }
}

}  // namespace

Tensor softmax(const Tensor& input, std::int64_t axis, SoftmaxKind kind) {
  check_floating(input, "softmax");
  if (input.dim() == 0) return softmax_coerced_2d(input, 0, kind);
  const std::int64_t d = detail::wrap_axis(axis, input.dim(), "softmax");
  const bool channels_last =
      input.dim() == 4 && input.suggest_memory_format() == MemoryFormat::ChannelsLast;
  Tensor output = empty(input.sizes(), {input.dtype(), channels_last ? MemoryFormat::ChannelsLast
                                                                     : MemoryFormat::Contiguous});
  // Every index with 0 on `axis` starts one row.
  Shape outer = input.sizes();
  const std::int64_t count = outer[static_cast<std::size_t>(d)];
  if (count == 0) return output;
  outer[static_cast<std::size_t>(d)] = 1;
  const std::int64_t is = input.stride(d), os = output.stride(d);
  const void* in = input.data_ptr();
  void* out = output.data_ptr();
  std::vector<double> scratch;
  for_each_index(outer, [&](const Shape& idx) {
    softmax_row(kind, in, detail::offset_in(idx, input.strides()), is, input.dtype(), out,
                detail::offset_in(idx, output.strides()), os, count, scratch);
  });
  return output;
}

// Before opset 13: rows are [prod(dims < axis)], each of prod(dims ≥ axis) elements in
// row-major order, so the softmax spans several dimensions; done on a contiguous copy.
Tensor softmax_coerced_2d(const Tensor& input, std::int64_t axis, SoftmaxKind kind) {
  check_floating(input, "softmax");
  const std::int64_t rank = input.dim();
  REFOLD_CHECK(axis >= -rank && axis <= rank, "softmax: axis {} out of range [{}, {}]", axis, -rank,
               rank);
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  const Shape& sizes = input.sizes();
  const std::int64_t rows =
      checked_numel(std::span(sizes).first(static_cast<std::size_t>(a)), "softmax");
  const std::int64_t cols =
      checked_numel(std::span(sizes).subspan(static_cast<std::size_t>(a)), "softmax");
  const Tensor dense = input.is_contiguous() ? input : input.clone(MemoryFormat::Contiguous);
  Tensor output = empty(sizes, input.dtype());
  if (cols == 0) return output;
  std::vector<double> scratch;
  for (std::int64_t r = 0; r < rows; ++r)
    softmax_row(kind, dense.data_ptr(), r * cols, 1, input.dtype(), output.data_ptr(), r * cols, 1,
                cols, scratch);
  return output;
}

}  // namespace refold::reference
