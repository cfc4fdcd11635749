// PyTorch's default parameter initialization for Conv*d and Linear, with refold's
// deterministic default_generator() (so a model built twice after manual_seed(s) is the same).
#pragma once

#include <cstdint>
#include <string>

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

// The weight and bias a Conv2d, ConvTranspose2d or Linear registers, completed in place. An
// undefined `weight` (and `bias`) gets reset_parameters()'s values, weight then bias, with
// fan_in = ∏ weight_shape[1:]. Given ones are checked against the module's options: `weight` a
// float tensor of `weight_shape`, a bias exactly when `has_bias`, [out] of the weight's dtype.
// Throws refold::Error naming `type` and what was given.
void weight_and_bias(const std::string& type, const Shape& weight_shape, std::int64_t out,
                     bool has_bias, Tensor& weight, Tensor& bias);

}  // namespace refold::nn::detail
