#include "nn/init.h"

#include <fmt/ranges.h>

#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/checked_math.h"

namespace refold::nn::detail {

double default_init_bound(std::int64_t fan_in) {
  return fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
}

Tensor uniform(const Shape& sizes, double bound) {
  const std::int64_t n = checked_numel(sizes, "uniform");
  std::vector<float> values(static_cast<std::size_t>(n));
  Generator& gen = default_generator();
  // u in [0, 1)  ->  (2u − 1) · bound in [−bound, bound)
  for (float& v : values) v = static_cast<float>((2.0 * gen.uniform() - 1.0) * bound);
  return from_values(values, sizes);
}

void weight_and_bias(const std::string& type, const Shape& weight_shape, std::int64_t out,
                     bool has_bias, Tensor& weight, Tensor& bias) {
  if (!weight.defined()) {
    REFOLD_CHECK(!bias.defined(), "{}: a bias is given without a weight", type);
    const Shape fan(weight_shape.begin() + 1, weight_shape.end());
    const double bound = default_init_bound(checked_numel(fan, type));
    weight = uniform(weight_shape, bound);
    if (has_bias) bias = uniform({out}, bound);
    return;
  }
  REFOLD_CHECK(weight.sizes() == weight_shape && is_floating(weight.dtype()),
               "{}: the weight given is {}; its options need a float [{}]", type,
               weight.description(), fmt::join(weight_shape, ", "));
  REFOLD_CHECK(has_bias == bias.defined(), "{}: the options say bias={} but a bias is {}", type,
               has_bias, bias.defined() ? "given" : "not given");
  if (has_bias)
    REFOLD_CHECK(bias.sizes() == Shape{out} && bias.dtype() == weight.dtype(),
                 "{}: the bias given is {}; its options need a [{}] of the weight's dtype {}", type,
                 bias.description(), out, dtype_name(weight.dtype()));
}

}  // namespace refold::nn::detail
