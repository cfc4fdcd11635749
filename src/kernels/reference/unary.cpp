// Reference element-wise math (ONNX's unary functions): computed in double, rounded once to
// the input's dtype; the output keeps the input's layout. NaN propagates through every formula.
#include <cmath>
#include <numbers>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/elementwise.h"
#include "kernels/reference/onnx_ops.h"

namespace refold::reference {
namespace {

// softplus(x) = ln(1 + eˣ), without overflow for large x: x + ln(1 + e⁻ˣ).
double softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

double sign(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : x); }  // sign(±0) = ±0, NaN = NaN

double apply(UnaryOp op, double x, double alpha, double beta) {
  using std::numbers::pi;
  switch (op) {
    case UnaryOp::Abs:
      return std::abs(x);
    case UnaryOp::Neg:
      return -x;
    case UnaryOp::Sign:
      return sign(x);
    case UnaryOp::Floor:
      return std::floor(x);
    case UnaryOp::Ceil:
      return std::ceil(x);
    case UnaryOp::Round:
      return std::nearbyint(x);  // halves to even (the default rounding mode)
    case UnaryOp::Reciprocal:
      return 1.0 / x;
    case UnaryOp::Sqrt:
      return std::sqrt(x);
    case UnaryOp::Exp:
      return std::exp(x);
    case UnaryOp::Log:
      return std::log(x);
    case UnaryOp::Erf:
      return std::erf(x);
    case UnaryOp::Tanh:
      return std::tanh(x);
    case UnaryOp::Sin:
      return std::sin(x);
    case UnaryOp::Cos:
      return std::cos(x);
    case UnaryOp::Tan:
      return std::tan(x);
    case UnaryOp::Asin:
      return std::asin(x);
    case UnaryOp::Acos:
      return std::acos(x);
    case UnaryOp::Atan:
      return std::atan(x);
    case UnaryOp::Sinh:
      return std::sinh(x);
    case UnaryOp::Cosh:
      return std::cosh(x);
    case UnaryOp::Asinh:
      return std::asinh(x);
    case UnaryOp::Acosh:
      return std::acosh(x);
    case UnaryOp::Atanh:
      return std::atanh(x);
    case UnaryOp::Softplus:
      return softplus(x);
    case UnaryOp::Softsign:
      return x / (1.0 + std::abs(x));
    case UnaryOp::Mish:
      return x * std::tanh(softplus(x));  // x·tanh(softplus(x))
    // gelu(x) = x·Φ(x) = ½x·(1 + erf(x/√2))
    case UnaryOp::Gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2));
    // tanh approximation: ½x·(1 + tanh(√(2/π)·(x + 0.044715x³)))
    case UnaryOp::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
    case UnaryOp::Elu:
      return x > 0 ? x : alpha * std::expm1(x);  // x > 0 ? x : α(eˣ − 1)
    case UnaryOp::Selu:
      return beta * (x > 0 ? x : alpha * std::expm1(x));  // γ·elu(x; α)
    // celu(x) = max(0, x) + min(0, α(e^(x/α) − 1))
    case UnaryOp::Celu:
      return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
    case UnaryOp::ThresholdedRelu:
      return x > alpha ? x : (std::isnan(x) ? x : 0.0);
    case UnaryOp::Pow:
      return std::pow(x, alpha);
  }
  fail("unary: unknown op {}", static_cast<int>(op));
}

std::int64_t apply_int(UnaryOp op, std::int64_t x) {
  // −INT64_MIN and |INT64_MIN| wrap to INT64_MIN, as two's complement (and NumPy) do.
  const auto negated = static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x));
  switch (op) {
    case UnaryOp::Abs:
      return x < 0 ? negated : x;
    case UnaryOp::Neg:
      return negated;
    case UnaryOp::Sign:
      return x > 0 ? 1 : (x < 0 ? -1 : 0);
    default:
      fail("{}: input has dtype int64; expected float32 or bfloat16", unary_name(op));
  }
}

}  // namespace

std::string_view unary_name(UnaryOp op) {
  static constexpr std::string_view names[] = {
      "Abs",      "Neg",  "Sign", "Floor",    "Ceil",  "Round", "Reciprocal", "Sqrt",
      "Exp",      "Log",  "Erf",  "Tanh",     "Sin",   "Cos",   "Tan",        "Asin",
      "Acos",     "Atan", "Sinh", "Cosh",     "Asinh", "Acosh", "Atanh",      "Softplus",
      "Softsign", "Mish", "Gelu", "GeluTanh", "Elu",   "Selu",  "Celu",       "ThresholdedRelu",
      "Pow"};
  static_assert(std::size(names) == static_cast<std::size_t>(UnaryOp::Pow) + 1);
  return names[static_cast<std::size_t>(op)];
}

Tensor unary(const Tensor& x, UnaryOp op, double alpha, double beta) {
  const std::string_view name = unary_name(op);
  REFOLD_CHECK(x.defined(), "{}: input is undefined", name);
  if (x.dtype() == DType::Int64) {
    Tensor output = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
    const std::int64_t* in = x.data<std::int64_t>();
    std::int64_t* out = output.data<std::int64_t>();
    for_each_index(x.sizes(), [&](const Shape& idx) {
      out[offset_of(idx, output.strides())] = apply_int(op, in[offset_of(idx, x.strides())]);
    });
    return output;
  }
  return detail::map_floating(x, [&](double v) { return apply(op, v, alpha, beta); });
}

}  // namespace refold::reference
