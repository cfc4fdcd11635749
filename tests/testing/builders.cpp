#include "testing/builders.h"

#include <cmath>
#include <cstddef>

namespace refold::testing {

Tensor values(std::vector<float> v, const Shape& sizes, TensorOptions options) {
  return from_values(v, sizes, options);
}

Tensor iota(const Shape& sizes, float start) {
  std::vector<float> v(static_cast<std::size_t>(empty(sizes).numel()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return from_values(v, sizes);
}

Tensor uniform(const Shape& sizes, double bound, Generator& gen) {
  std::vector<float> v(static_cast<std::size_t>(empty(sizes).numel()));
  for (float& e : v) e = static_cast<float>((2 * gen.uniform() - 1) * bound);
  return from_values(v, sizes);
}

Tensor pytorch_init(const Shape& sizes, std::int64_t fan_in, Generator& gen) {
  return uniform(sizes, 1.0 / std::sqrt(static_cast<double>(fan_in)), gen);
}

}  // namespace refold::testing
