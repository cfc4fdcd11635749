// Element-wise activations: the nn module of the same function when there is one, else a
// graph op (Clip with other bounds, HardSigmoid with ONNX's default alpha/beta).
#include <cmath>
#include <optional>

#include "core/check.h"
#include "onnx/ops/cnn_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/clip.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"

namespace refold::onnx::ops {
namespace {

void check_unary(const graph::Node& node) { check_arity(node, 1, 1, 1); }

float finite_float(const graph::Attributes& a, const std::string& name, float fallback) {
  const float v = a.get_float(name, fallback);
  REFOLD_CHECK(std::isfinite(v), "{} must be finite (got {})", name, v);
  return v;
}

}  // namespace

nn::ModulePtr build_relu(const BuildContext& context) {
  check_unary(context.node);
  return std::make_shared<nn::ReLU>();
}

nn::ModulePtr build_sigmoid(const BuildContext& context) {
  check_unary(context.node);
  return std::make_shared<nn::Sigmoid>();
}

nn::ModulePtr build_hard_swish(const BuildContext& context) {
  check_unary(context.node);
  return std::make_shared<nn::Hardswish>();
}

nn::ModulePtr build_identity(const BuildContext& context) {
  check_unary(context.node);
  return std::make_shared<nn::Identity>();
}

nn::ModulePtr build_leaky_relu(const BuildContext& context) {
  check_unary(context.node);
  const float alpha = finite_float(context.node.attributes, "alpha", 0.01f);
  return std::make_shared<nn::LeakyReLU>(nn::LeakyReLUOptions().negative_slope(alpha));
}

nn::ModulePtr build_hard_sigmoid(const BuildContext& context) {
  check_unary(context.node);
  const float alpha = finite_float(context.node.attributes, "alpha", 0.2f);
  const float beta = finite_float(context.node.attributes, "beta", 0.5f);
  // PyTorch's Hardsigmoid is relu6(x + 3) / 6 = clamp(x/6 + 1/2, 0, 1): alpha = 1/6 (as the
  // float PyTorch's exporter writes), beta = 1/2.
  if (alpha == static_cast<float>(1.0 / 6.0) && beta == 0.5f)
    return std::make_shared<nn::Hardsigmoid>();
  return std::make_shared<graph::ops::HardSigmoid>(alpha, beta);
}

nn::ModulePtr build_clip(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 3, 1);
  const bool has_min = !input_name(node, 1).empty();
  const bool has_max = !input_name(node, 2).empty();
  const bool min_const = !has_min || is_constant_input(context.graph, node, 1);
  const bool max_const = !has_max || is_constant_input(context.graph, node, 2);
  if (!min_const || !max_const) return std::make_shared<graph::ops::Clip>();
  const auto lo =
      has_min ? graph::ops::scalar_bound(context.graph.constant(node.inputs[1]), "Clip", "min")
              : std::nullopt;
  const auto hi =
      has_max ? graph::ops::scalar_bound(context.graph.constant(node.inputs[2]), "Clip", "max")
              : std::nullopt;
  // The activations PyTorch exports as Clip: relu6 = Clip(0, 6), relu = Clip(0).
  if (lo && *lo == 0.0 && hi && *hi == 6.0) return std::make_shared<nn::ReLU6>();
  if (lo && *lo == 0.0 && !hi) return std::make_shared<nn::ReLU>();
  return std::make_shared<graph::ops::Clip>();
}

}  // namespace refold::onnx::ops
