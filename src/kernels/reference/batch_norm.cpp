// Reference batch normalization, inference mode (running statistics), any rank >= 2, any
// strides. The channel is dim 1, as in torch.nn.functional.batch_norm.
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/batch_norm_checks.h"
#include "refold/reference.h"

namespace refold::reference {

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps) {
  const detail::BatchNormChannels checked =
      detail::check_batch_norm(input, running_mean, running_var, weight, bias, eps);
  const DType dtype = input.dtype();
  // The sums below are in double.
  const auto to_double = [](const std::vector<float>& v) {
    return std::vector<double>(v.begin(), v.end());
  };
  const std::vector<double> mean = to_double(checked.mean), gamma = to_double(checked.weight),
                            beta = to_double(checked.bias);
  std::vector<double> inv_std(checked.var.size());
  for (std::size_t c = 0; c < inv_std.size(); ++c)
    inv_std[c] = 1.0 / std::sqrt(static_cast<double>(checked.var[c]) + eps);

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
