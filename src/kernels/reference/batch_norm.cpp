// Reference batch normalization, inference mode (running statistics), any rank >= 2, any
// strides. The channel is dim 1, as in torch.nn.functional.batch_norm.
#include <cmath>

#include "core/check.h"
#include "core/element_access.h"
#include "refold/reference.h"

namespace refold::reference {
namespace {

constexpr const char* kOp = "batch_norm";

void check_float(const Tensor& t, const char* name) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", kOp, name);
  REFOLD_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::BFloat16,
               "{}: {} has dtype {}; only float32 and bfloat16 are supported", kOp, name,
               dtype_name(t.dtype()));
}

// A per-channel parameter: 1-D, C long, the input's dtype. Returns its values as double.
std::vector<double> channel_values(const Tensor& param, const char* name, std::int64_t channels,
                                   DType dtype) {
  check_float(param, name);
  REFOLD_CHECK(param.dtype() == dtype, "{}: {} has dtype {} but the input has {}", kOp, name,
               dtype_name(param.dtype()), dtype_name(dtype));
  REFOLD_CHECK(param.dim() == 1 && param.size(0) == channels,
               "{}: {} has shape [{}], expected [{}] (one value per channel)", kOp, name,
               fmt::join(param.sizes(), ", "), channels);
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(channels));
  for (float v : param.to_vector()) values.push_back(v);
  return values;
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps) {
  check_float(input, "input");
  REFOLD_CHECK(input.dim() >= 2, "{}: input must have at least 2 dimensions (N, C, ...), got [{}]",
               kOp, fmt::join(input.sizes(), ", "));
  REFOLD_CHECK(eps >= 0 && std::isfinite(eps), "{}: eps ({}) must be finite and non-negative", kOp,
               eps);
  const std::int64_t channels = input.size(1);
  const DType dtype = input.dtype();
  const std::vector<double> mean = channel_values(running_mean, "running_mean", channels, dtype);
  const std::vector<double> var = channel_values(running_var, "running_var", channels, dtype);
  // affine=False: weight 1, bias 0.
  const std::vector<double> gamma = weight.defined()
                                        ? channel_values(weight, "weight", channels, dtype)
                                        : std::vector<double>(mean.size(), 1.0);
  const std::vector<double> beta = bias.defined() ? channel_values(bias, "bias", channels, dtype)
                                                  : std::vector<double>(mean.size(), 0.0);

  // A negative variance makes sqrt(var + eps) NaN, and var + eps == 0 divides by zero; both
  // would poison every later fold silently (RELIABILITY F18, F19), so name the channel instead.
  // A NaN variance is data, not a bad argument: it propagates like any NaN input.
  std::vector<double> inv_std(var.size());
  for (std::size_t c = 0; c < var.size(); ++c) {
    REFOLD_CHECK(!(var[c] < 0), "{}: running_var[{}] = {} is negative", kOp, c, var[c]);
    REFOLD_CHECK(var[c] + eps != 0, "{}: running_var[{}] + eps is 0 (division by zero)", kOp, c);
    inv_std[c] = 1.0 / std::sqrt(var[c] + eps);
  }

  Tensor output = empty_like(input, {dtype, MemoryFormat::Preserve});
  const FloatReader in(input);
  const FloatWriter out(output);
  for_each_index(input.sizes(), [&](const Shape& idx) {
    const auto c = static_cast<std::size_t>(idx[1]);
    // y = (x − mean[c]) / sqrt(var[c] + eps) · weight[c] + bias[c]
    const double x = in.at_offset(offset_of(idx, in.strides()));
    const double y = (x - mean[c]) * inv_std[c] * gamma[c] + beta[c];
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(y, dtype));
  });
  return output;
}

}  // namespace refold::reference
