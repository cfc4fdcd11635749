#include "nn/init.h"

#include <cmath>
#include <vector>

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

}  // namespace refold::nn::detail
