// Reference element-wise add and mul with NumPy broadcasting.
//
// Broadcasting: align the shapes at their last dimension; each pair of sizes must be equal or
// contain a 1, and the output takes the larger. An input reads a broadcast dimension with stride
// 0, so one loop over the output's logical indices serves every shape.
//
// Output layout: detail::layout_operand's (binary_checks.h), else contiguous.
#include <algorithm>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/binary_checks.h"
#include "kernels/reference/typed_elements.h"
#include "refold/reference.h"

namespace refold::reference {

using detail::broadcast_strides;
namespace {

template <typename F>
Tensor binary(const Tensor& a, const Tensor& b, const char* op, F f) {
  const Shape sizes = detail::check_binary(a, b, op);
  const DType dtype = a.dtype();
  const Tensor* like = detail::layout_operand(a, b, sizes);
  Tensor output = like != nullptr ? empty_like(*like, {dtype, MemoryFormat::Preserve})
                                  : empty(sizes, {dtype, MemoryFormat::Contiguous});
  const Shape a_strides = broadcast_strides(a, sizes);
  const Shape b_strides = broadcast_strides(b, sizes);
  const FloatReader ra(a);
  const FloatReader rb(b);
  const FloatWriter out(output);
  for_each_index(sizes, [&](const Shape& idx) {
    const double x = ra.at_offset(offset_of(idx, a_strides));
    const double y = rb.at_offset(offset_of(idx, b_strides));
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(f(x, y), dtype));
  });
  return output;
}

}  // namespace

// out = a + b
Tensor add(const Tensor& a, const Tensor& b) {
  return binary(a, b, "add", [](double x, double y) { return x + y; });
}

// out = a · b
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary(a, b, "mul", [](double x, double y) { return x * y; });
}

}  // namespace refold::reference
