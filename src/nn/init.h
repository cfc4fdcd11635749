// PyTorch's default parameter initialization for Conv*d and Linear, with refold's
// deterministic default_generator() (so a model built twice after manual_seed(s) is the same).
#pragma once

#include <cstdint>

#include "refold/tensor.h"

namespace refold::nn::detail {

// reset_parameters() of torch.nn.Conv2d / ConvTranspose2d / Linear:
//   weight: kaiming_uniform_(a = √5):  gain = √(2 / (1 + a²)) = √(1/3),
//           bound = √3 · gain / √fan_in = 1 / √fan_in
//   bias:   U(−1/√fan_in, 1/√fan_in)  (0 when fan_in == 0)
// fan_in = weight.size(1) · kh · kw — for ConvTranspose2d that is out/groups · kh · kw, since
// its weight is [in, out/groups, kh, kw]; PyTorch computes it the same way.
double default_init_bound(std::int64_t fan_in);

// A float32 tensor of `sizes`, contiguous, values U(−bound, bound) drawn in logical order.
Tensor uniform(const Shape& sizes, double bound);

}  // namespace refold::nn::detail
