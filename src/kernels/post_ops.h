// What a conv does to its result before writing it, fused into the conv where the backend can
// (oneDNN post-ops) and applied afterwards where it cannot (the reference path):
//
//   y = activation(conv(x) + bias + residual)
//
// The residual (the `sum` of ResNet/RepVGG-style blocks) is added before the activation,
// because that is where those blocks put it: relu(bn(conv(x)) + identity).
// Not oneDNN-specific: the dispatch layer builds one PostOps and hands it to whichever kernel
// runs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "refold/dtype.h"
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

// Validates `post` for an op whose output has `output_sizes` and `dtype`; errors start with `op`:
//   conv2d: residual must have the output's sizes [1, 8, 4, 4], got float32[1, 8, 4, 5]
void check_post_ops(std::string_view op, const PostOps& post, const Shape& output_sizes,
                    DType dtype);

namespace reference {

// Applies `post` to an already computed op output (reference conv2d, …): the unfused form of
// what a backend fuses. The result keeps `output`'s layout and dtype. Each step rounds to the
// dtype, so for bfloat16 this rounds up to three times where a fused kernel rounds once.
Tensor apply_post_ops(const Tensor& output, const PostOps& post);

}  // namespace reference
}  // namespace refold
