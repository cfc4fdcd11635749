// What a convolution does to its result before writing it, fused into the conv's primitive
// where the backend can (oneDNN post-ops) and applied afterwards where it cannot (reference):
//
//   y = activation(conv(x) + bias + residual)
//
// The residual (the `sum` of ResNet/RepVGG-style blocks) is added before the activation,
// because that is where those blocks put it: relu(bn(conv(x)) + identity).
//
//   PostOps post;
//   post.activation = Activation::ReLU;
//   Tensor y = functional::conv2d(x, w, b, options, post);   // one primitive, no extra pass
//
// nn::Conv2d::set_activation and nn::utils::fuse_conv_activations build these for modules.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "refold/tensor.h"

namespace refold {

enum class Activation : std::uint8_t {
  None,
  ReLU,         // max(x, 0)
  ReLU6,        // min(max(x, 0), 6)
  LeakyReLU,    // x > 0 ? x : negative_slope·x
  Sigmoid,      // 1 / (1 + e^−x)
  SiLU,         // x·sigmoid(x)
  HardSwish,    // x·relu6(x + 3) / 6
  HardSigmoid,  // relu6(x + 3) / 6
};

std::string_view activation_name(Activation activation);  // "relu", "leaky_relu", ...

struct PostOps {
  Activation activation = Activation::None;
  double negative_slope = 0.01;  // LeakyReLU only (PyTorch's default)
  // Added before the activation; undefined means none. Must have the op output's sizes and the
  // input's dtype; any layout (it is copied into the output).
  Tensor residual;

  bool empty() const { return activation == Activation::None && !residual.defined(); }
  std::string description() const;  // "none", "relu", "sum+leaky_relu(0.1)", ...
};

}  // namespace refold
