// Reference arith (Add/Sub/Mul/Div/Pow/Max/Min with NumPy broadcasting, float and int64), clip and
// hard_sigmoid. See kernels/reference/onnx_ops.h.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/binary_checks.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {

using detail::broadcast_strides;
namespace {

// The output's layout: detail::layout_operand's, else contiguous.
Tensor output_like(const Tensor& a, const Tensor& b, const Shape& sizes) {
  const DType dtype = a.dtype();
  if (const Tensor* like = detail::layout_operand(a, b, sizes))
    return empty_like(*like, {dtype, MemoryFormat::Preserve});
  return empty(sizes, {dtype, MemoryFormat::Contiguous});
}

// Two's-complement wrap-around, as NumPy (signed overflow is undefined in C++).
std::int64_t wrap(std::uint64_t v) { return static_cast<std::int64_t>(v); }

std::int64_t int_op(std::int64_t x, std::int64_t y, ArithOp op, const char* name) {
  const auto ux = static_cast<std::uint64_t>(x), uy = static_cast<std::uint64_t>(y);
  switch (op) {
    case ArithOp::Add:
      return wrap(ux + uy);
    case ArithOp::Sub:
      return wrap(ux - uy);
    case ArithOp::Mul:
      return wrap(ux * uy);
    case ArithOp::Div:
      REFOLD_CHECK(y != 0, "{}: int64 division by zero ({} / 0)", name, x);
      // INT64_MIN / −1 overflows: wrap to INT64_MIN like two's complement negation.
      if (y == -1) return wrap(0 - ux);
      return x / y;  // C++ truncates toward zero, as ONNX specifies for integers
    case ArithOp::Pow: {
      // x^y by squaring, wrapping like the other int64 ops; a negative exponent is 1/x^|y|,
      // which truncates to 0 unless |x| = 1 (NumPy refuses it; ONNX Runtime computes this).
      if (y < 0) return x == 1 ? 1 : (x == -1 ? ((y & 1) != 0 ? -1 : 1) : 0);
      std::uint64_t result = 1, base = ux;
      for (std::uint64_t e = uy; e != 0; e >>= 1) {
        if ((e & 1) != 0) result *= base;
        base *= base;
      }
      return wrap(result);
    }
    case ArithOp::Max:
      return std::max(x, y);
    case ArithOp::Min:
      return std::min(x, y);
    case ArithOp::PRelu:
      return x < 0 ? wrap(ux * uy) : x;
    case ArithOp::Mod:
    case ArithOp::FMod: {
      REFOLD_CHECK(y != 0, "{}: int64 division by zero ({} mod 0)", name, x);
      if (y == -1) return 0;         // INT64_MIN % −1 overflows in C++; the remainder is 0
      const std::int64_t r = x % y;  // the dividend's sign (C)
      return op == ArithOp::Mod && r != 0 && ((r < 0) != (y < 0)) ? r + y : r;
    }
  }
  return 0;
}

double float_op(double x, double y, ArithOp op) {
  switch (op) {
    case ArithOp::Add:
      return x + y;
    case ArithOp::Sub:
      return x - y;
    case ArithOp::Mul:
      return x * y;
    case ArithOp::Div:
      return x / y;
    case ArithOp::Pow:
      return std::pow(x, y);
    // NaN wins, as in NumPy's maximum/minimum (std::max would depend on the argument order).
    case ArithOp::Max:
      return std::isnan(x) || std::isnan(y) ? x + y : std::max(x, y);
    case ArithOp::Min:
      return std::isnan(x) || std::isnan(y) ? x + y : std::min(x, y);
    case ArithOp::PRelu:
      return x < 0 ? y * x : x;
    case ArithOp::Mod:  // refused for floats by the Mod builder (ONNX requires fmod = 1)
    case ArithOp::FMod:
      return std::fmod(x, y);
  }
  return 0;
}

}  // namespace

const char* arith_name(ArithOp op) {
  switch (op) {
    case ArithOp::Add:
      return "Add";
    case ArithOp::Sub:
      return "Sub";
    case ArithOp::Mul:
      return "Mul";
    case ArithOp::Div:
      return "Div";
    case ArithOp::Pow:
      return "Pow";
    case ArithOp::Max:
      return "Max";
    case ArithOp::Min:
      return "Min";
    case ArithOp::PRelu:
      return "PRelu";
    case ArithOp::Mod:
    case ArithOp::FMod:
      return "Mod";
  }
  return "?";
}

Tensor arith(const Tensor& a, const Tensor& b, ArithOp op) {
  const char* name = arith_name(op);
  REFOLD_CHECK(a.defined() && b.defined(), "{}: an operand is undefined", name);
  REFOLD_CHECK(a.dtype() == b.dtype(), "{}: operands have different dtypes ({} and {})", name,
               dtype_name(a.dtype()), dtype_name(b.dtype()));
  const Shape sizes = detail::broadcast_shape(a.sizes(), b.sizes(), name);
  Tensor output = output_like(a, b, sizes);
  const Shape as = broadcast_strides(a, sizes), bs = broadcast_strides(b, sizes);
  if (a.dtype() == DType::Int64) {
    const std::int64_t* pa = a.data<std::int64_t>();
    const std::int64_t* pb = b.data<std::int64_t>();
    std::int64_t* po = output.data<std::int64_t>();
    const Shape os = output.strides();
    for_each_index(sizes, [&](const Shape& idx) {
      po[offset_of(idx, os)] = int_op(pa[offset_of(idx, as)], pb[offset_of(idx, bs)], op, name);
    });
    return output;
  }
  const FloatReader ra(a), rb(b);
  const FloatWriter out(output);
  const DType dtype = a.dtype();
  for_each_index(sizes, [&](const Shape& idx) {
    const double r =
        float_op(ra.at_offset(offset_of(idx, as)), rb.at_offset(offset_of(idx, bs)), op);
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(r, dtype));
  });
  return output;
}

Tensor clip(const Tensor& x, std::optional<double> lo, std::optional<double> hi) {
  REFOLD_CHECK(x.defined(), "Clip: input is undefined");
  Tensor output = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  if (x.dtype() == DType::Int64) {
    const std::int64_t* px = x.data<std::int64_t>();
    std::int64_t* po = output.data<std::int64_t>();
    const Shape xs = x.strides(), os = output.strides();
    for_each_index(x.sizes(), [&](const Shape& idx) {
      std::int64_t v = px[offset_of(idx, xs)];
      if (lo && v < static_cast<std::int64_t>(*lo)) v = static_cast<std::int64_t>(*lo);
      if (hi && v > static_cast<std::int64_t>(*hi)) v = static_cast<std::int64_t>(*hi);
      po[offset_of(idx, os)] = v;
    });
    return output;
  }
  const FloatReader in(x);
  const FloatWriter out(output);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    double v = in.at_offset(offset_of(idx, in.strides()));
    // Comparisons with NaN are false, so NaN passes through.
    if (lo && v < *lo) v = *lo;
    if (hi && v > *hi) v = *hi;
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(v, x.dtype()));
  });
  return output;
}

Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) {
  REFOLD_CHECK(x.defined(), "HardSigmoid: input is undefined");
  REFOLD_CHECK(is_floating(x.dtype()),
               "HardSigmoid: input has dtype {}; expected float32 or bfloat16",
               dtype_name(x.dtype()));
  Tensor output = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  const FloatReader in(x);
  const FloatWriter out(output);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const double v = in.at_offset(offset_of(idx, in.strides()));
    // max(0, min(1, alpha·x + beta)); NaN propagates (std::fmin/fmax would drop it).
    double y = alpha * v + beta;
    if (y > 1.0) y = 1.0;
    if (y < 0.0) y = 0.0;
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(y, x.dtype()));
  });
  return output;
}

}  // namespace refold::reference
