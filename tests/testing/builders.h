// Small tensor builders shared by the tests: literal values, counting values, and random
// weights at PyTorch's default init scale.
#pragma once

#include <cstdint>
#include <vector>

#include "refold/tensor.h"

namespace refold::testing {

// `v` in logical row-major order: values({1, 2, 3, 4}, {2, 2}).
Tensor values(std::vector<float> v, const Shape& sizes, TensorOptions options = {});

// start, start + 1, start + 2, … in logical order, so that a value names its own (row-major)
// position.
Tensor iota(const Shape& sizes, float start = 0);

// Uniform in [−bound, bound), one gen.uniform() per element in logical order.
Tensor uniform(const Shape& sizes, double bound, Generator& gen);

// PyTorch's default init for conv and linear weights: uniform in ±1/√fan_in (fan_in = input
// features, or in_channels/groups·kh·kw), which keeps outputs O(1) whatever the channel count.
Tensor pytorch_init(const Shape& sizes, std::int64_t fan_in, Generator& gen);

}  // namespace refold::testing
