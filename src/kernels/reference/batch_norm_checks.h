// Argument checks of batch_norm (inference), shared by the reference and the oneDNN backend so
// that both reject the same calls with the same messages.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "refold/dtype.h"
#include "refold/tensor.h"

namespace refold::reference::detail {

inline void check_batch_norm_float(const Tensor& t, const char* name) {
  REFOLD_CHECK(t.defined(), "batch_norm: {} is undefined", name);
  REFOLD_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::BFloat16,
               "batch_norm: {} has dtype {}; only float32 and bfloat16 are supported", name,
               dtype_name(t.dtype()));
}

// A per-channel parameter: 1-D, C long, the input's dtype. Returns its values.
inline std::vector<float> batch_norm_channel(const Tensor& param, const char* name,
                                             std::int64_t channels, DType dtype) {
  check_batch_norm_float(param, name);
  REFOLD_CHECK(param.dtype() == dtype, "batch_norm: {} has dtype {} but the input has {}", name,
               dtype_name(param.dtype()), dtype_name(dtype));
  REFOLD_CHECK(param.dim() == 1 && param.size(0) == channels,
               "batch_norm: {} has shape [{}], expected [{}] (one value per channel)", name,
               fmt::join(param.sizes(), ", "), channels);
  return param.to_vector();
}

// The per-channel values of a checked batch_norm call; weight 1 and bias 0 when undefined
// (affine=False).
struct BatchNormChannels {
  std::vector<float> mean, var, weight, bias;
};

// Checks every argument, in this order: input, eps, running_mean, running_var, weight, bias,
// then each variance. A negative variance makes sqrt(var + eps) NaN, and var + eps == 0 divides
// by zero; both would poison every later fold silently (docs/reliability.md F18, F19), so name the
// channel instead. The sum is taken in double. A NaN variance is data, not a bad argument: it
// propagates like any NaN input.
inline BatchNormChannels check_batch_norm(const Tensor& input, const Tensor& running_mean,
                                          const Tensor& running_var, const Tensor& weight,
                                          const Tensor& bias, double eps) {
  check_batch_norm_float(input, "input");
  REFOLD_CHECK(input.dim() >= 2,
               "batch_norm: input must have at least 2 dimensions (N, C, ...), got [{}]",
               fmt::join(input.sizes(), ", "));
  REFOLD_CHECK(eps >= 0 && std::isfinite(eps),
               "batch_norm: eps ({}) must be finite and non-negative", eps);
  const std::int64_t channels = input.size(1);
  const DType dtype = input.dtype();
  BatchNormChannels c;
  c.mean = batch_norm_channel(running_mean, "running_mean", channels, dtype);
  c.var = batch_norm_channel(running_var, "running_var", channels, dtype);
  c.weight = weight.defined() ? batch_norm_channel(weight, "weight", channels, dtype)
                              : std::vector<float>(c.mean.size(), 1.0f);
  c.bias = bias.defined() ? batch_norm_channel(bias, "bias", channels, dtype)
                          : std::vector<float>(c.mean.size(), 0.0f);
  for (std::size_t i = 0; i < c.var.size(); ++i) {
    const double v = c.var[i];
    REFOLD_CHECK(!(v < 0), "batch_norm: running_var[{}] = {} is negative", i, v);
    REFOLD_CHECK(v + eps != 0, "batch_norm: running_var[{}] + eps is 0 (division by zero)", i);
  }
  return c;
}

}  // namespace refold::reference::detail
