// What a convolution does to its result before writing it, fused into the conv's primitive
// where the backend can (oneDNN post-ops, refold's native epilogue) and applied afterwards where
// it cannot (reference):
//
//   y = activation(conv(x) + bias + residual)                      the head
//   y = step.activation(y·step.scale + step.shift [+ residual])    then each of `then`, in order
//
// The residual (the `sum` of ResNet/RepVGG-style blocks) is added before the activation,
// because that is where those blocks put it: relu(bn(conv(x)) + identity) — unless a step adds
// it (YOLO's bottleneck, x + silu(conv(x))). The steps are the elementwise chains graphs write
// after a conv's activation: a Mul/Add by a constant per tensor or per channel (timm's
// LearnableAffineBlock, a BatchNorm after the activation), a second activation.
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
#include <vector>

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
  GELU,         // x·Φ(x) = ½x·(1 + erf(x/√2)), the exact (erf) form
  GELUTanh,     // ½x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), GELU's tanh approximation
};
inline constexpr Activation kLastActivation = Activation::GELUTanh;

std::string_view activation_name(Activation activation);  // "relu", "leaky_relu", ...

// One step after the head: y = activation(y·scale + shift [+ residual]). `scale` and `shift`
// hold 1 value (per tensor) or one per output channel (axis 1 of NCHW); empty means ×1 / +0.
struct PostStep {
  std::vector<float> scale = {};
  std::vector<float> shift = {};
  bool add_residual = false;  // adds PostOps::residual here, not before the head's activation
  Activation activation = Activation::None;
  double negative_slope = 0.01;  // LeakyReLU only
};

struct PostOps {
  Activation activation = Activation::None;
  double negative_slope = 0.01;  // LeakyReLU only (PyTorch's default)
  // Added before the activation (or by the step that says add_residual); undefined means none.
  // Must have the op output's sizes and the input's dtype; any layout (it is copied into the
  // output).
  Tensor residual;
  // The result may take the residual's memory: a kernel that adds the residual where it lies
  // (oneDNN's sum post-op accumulates onto dst) writes y over it and returns it. Only for a
  // residual whose caller holds no other handle on it and never reads it again (the graph
  // executor hands such values over, graph::Op::run_consuming).
  bool overwrite_residual = false;
  std::vector<PostStep> then = {};  // after the head's activation, in order

  bool empty() const {
    return activation == Activation::None && !residual.defined() && then.empty();
  }
  // True when a step adds the residual (so the head does not).
  bool residual_in_steps() const;
  // "none", "relu", "sum+leaky_relu(0.1)", "relu+mul[1]+add[1]", "silu+sum", ...
  std::string description() const;
};

}  // namespace refold
