// The reference kernels: plain loops over logical indices, accepting any strides and dtype
// float32 or bfloat16 (computed in double, rounded once to the output dtype). They are the
// oracle every faster implementation is tested against, so they favour obviousness.
//
// Output memory format follows PyTorch: conv2d and conv_transpose2d produce channels_last when
// the input or the weight suggests channels_last; every other op keeps its (first) input's
// format (batch_norm, activations, add/mul, pools, pad, pixel_shuffle); cat is channels_last
// only when every input suggests channels_last (PyTorch 1.13's rule), else contiguous.
// An undefined `bias` (Tensor{}) means no bias. Arguments are validated; errors are
// refold::Error naming the argument and value.
#pragma once

#include <vector>

#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::reference {

// input [N, C_in, H, W], weight [C_out, C_in/groups, kh, kw], bias [C_out]
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
              const Conv2dOptions& options = {});
// input [N, C_in, H, W], weight [C_in, C_out/groups, kh, kw] (PyTorch's layout), bias [C_out]
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = {},
                        const ConvTranspose2dOptions& options = {});
// Inference: (x − mean) / sqrt(var + eps) · weight + bias, per channel (dim 1).
// weight and bias may be undefined (affine=False).
Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps = 1e-5);

Tensor relu(const Tensor& input);
Tensor relu6(const Tensor& input);
Tensor leaky_relu(const Tensor& input, double negative_slope = 0.01);
Tensor sigmoid(const Tensor& input);
Tensor silu(const Tensor& input);
Tensor hardswish(const Tensor& input);
Tensor hardsigmoid(const Tensor& input);

// Broadcasting (NumPy rules) element-wise ops; the output takes `a`'s format when `a` has the
// output's shape, else `b`'s when `b` has it, else contiguous.
Tensor add(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);

Tensor max_pool2d(const Tensor& input, const MaxPool2dOptions& options);
Tensor avg_pool2d(const Tensor& input, const AvgPool2dOptions& options);
Tensor adaptive_avg_pool2d(const Tensor& input, Size2d output_size);

// input [..., in_features], weight [out_features, in_features], bias [out_features]
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = {});
Tensor flatten(const Tensor& input, std::int64_t start_dim = 1, std::int64_t end_dim = -1);
Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim = 0);
// F.pad, constant mode: `pads` = (last_begin, last_end, second_last_begin, ...); negative
// values crop.
Tensor pad(const Tensor& input, const std::vector<std::int64_t>& pads, float value = 0.0f);
Tensor pixel_shuffle(const Tensor& input, std::int64_t upscale_factor);

}  // namespace refold::reference
