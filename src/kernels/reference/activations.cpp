// Reference activations: one element-wise loop (unary) and the formula of each op. Computed in
// double, rounded once to the input's dtype; the output keeps the input's layout.
//
// NaN propagates as in PyTorch: relu(NaN) = relu6(NaN) = NaN (clamp propagates NaN rather than
// picking a bound), and every formula below passes a NaN through its arithmetic.
#include <cmath>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/elementwise.h"
#include "refold/reference.h"

namespace refold::reference {
namespace {

// Applies y = f(x) to every element.
template <typename F>
Tensor unary(const Tensor& input, const char* op, F f) {
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  const DType dtype = input.dtype();
  REFOLD_CHECK(dtype == DType::Float32 || dtype == DType::BFloat16,
               "{}: input has dtype {}; only float32 and bfloat16 are supported", op,
               dtype_name(dtype));
  return detail::map_floating(input, f);
}

// min(max(x, lo), hi), but NaN stays NaN (std::clamp's comparisons would return a bound).
double clamp(double x, double lo, double hi) {
  if (std::isnan(x)) return x;
  return x < lo ? lo : (x > hi ? hi : x);
}

// σ(x) = 1 / (1 + e^−x); e^−x overflows to +inf for very negative x, giving the right limit 0.
double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

}  // namespace

// relu(x) = max(x, 0)
Tensor relu(const Tensor& input) {
  return unary(input, "relu", [](double x) { return std::isnan(x) ? x : (x > 0 ? x : 0.0); });
}

// relu6(x) = min(max(x, 0), 6)
Tensor relu6(const Tensor& input) {
  return unary(input, "relu6", [](double x) { return clamp(x, 0.0, 6.0); });
}

// leaky_relu(x) = x if x > 0 else negative_slope · x
Tensor leaky_relu(const Tensor& input, double negative_slope) {
  REFOLD_CHECK(std::isfinite(negative_slope), "leaky_relu: negative_slope ({}) must be finite",
               negative_slope);
  return unary(input, "leaky_relu",
               [negative_slope](double x) { return x > 0 ? x : negative_slope * x; });
}

// sigmoid(x) = 1 / (1 + e^−x)
Tensor sigmoid(const Tensor& input) { return unary(input, "sigmoid", logistic); }

// silu(x) = x · sigmoid(x)
Tensor silu(const Tensor& input) {
  return unary(input, "silu", [](double x) { return x * logistic(x); });
}

// hardswish(x) = x · relu6(x + 3) / 6
Tensor hardswish(const Tensor& input) {
  return unary(input, "hardswish", [](double x) { return x * clamp(x + 3.0, 0.0, 6.0) / 6.0; });
}

// hardsigmoid(x) = relu6(x + 3) / 6
Tensor hardsigmoid(const Tensor& input) {
  return unary(input, "hardsigmoid", [](double x) { return clamp(x + 3.0, 0.0, 6.0) / 6.0; });
}

}  // namespace refold::reference
