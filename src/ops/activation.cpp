// Element-wise activations: the nn module of the same function when there is one, else a
// graph op (Clip with other bounds, HardSigmoid with ONNX's default alpha/beta).
#include "ops/activation.h"

#include <fmt/ranges.h>

#include <cmath>
#include <optional>

#include "core/check.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"
#include "refold/reference_extra.h"

namespace refold::ops {

std::optional<double> scalar_bound(const Tensor& t, const char* op, const char* name) {
  if (!t.defined()) return std::nullopt;
  REFOLD_CHECK(t.numel() == 1, "{}: {} must be a scalar, got [{}]", op, name,
               fmt::join(t.sizes(), ", "));
  if (t.dtype() == DType::Int64) return static_cast<double>(*t.data<std::int64_t>());
  return static_cast<double>(t.item());
}

std::vector<Tensor> Clip::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(!in.empty() && in.size() <= 3 && in[0].defined(),
               "Clip: expects X and optional min, max; got {} inputs", in.size());
  const auto lo = scalar_bound(in.size() > 1 ? in[1] : Tensor(), "Clip", "min");
  const auto hi = scalar_bound(in.size() > 2 ? in[2] : Tensor(), "Clip", "max");
  for (std::size_t i = 1; i < in.size(); ++i)
    REFOLD_CHECK(!in[i].defined() || in[i].dtype() == in[0].dtype(),
                 "Clip: {} has dtype {} but X has {}", i == 1 ? "min" : "max",
                 dtype_name(in[i].dtype()), dtype_name(in[0].dtype()));
  return {reference::clip(in[0], lo, hi)};
}

std::vector<Tensor> HardSigmoid::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 1 && in[0].defined(), "HardSigmoid: expects 1 input, got {}",
               in.size());
  return {reference::hard_sigmoid(in[0], alpha_, beta_)};
}

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
  return std::make_shared<HardSigmoid>(alpha, beta);
}

nn::ModulePtr build_clip(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 3, 1);
  const bool has_min = !input_name(node, 1).empty();
  const bool has_max = !input_name(node, 2).empty();
  const bool min_const = !has_min || is_constant_input(context.graph, node, 1);
  const bool max_const = !has_max || is_constant_input(context.graph, node, 2);
  if (!min_const || !max_const) return std::make_shared<Clip>();
  const auto lo =
      has_min ? scalar_bound(context.graph.constant(node.inputs[1]), "Clip", "min")
              : std::nullopt;
  const auto hi =
      has_max ? scalar_bound(context.graph.constant(node.inputs[2]), "Clip", "max")
              : std::nullopt;
  // The activations PyTorch exports as Clip: relu6 = Clip(0, 6), relu = Clip(0).
  if (lo && *lo == 0.0 && hi && *hi == 6.0) return std::make_shared<nn::ReLU6>();
  if (lo && *lo == 0.0 && !hi) return std::make_shared<nn::ReLU>();
  return std::make_shared<Clip>();
}

const std::vector<OpDef>& activation_ops() {
  static const std::vector<OpDef> table = {
      {"Relu", 6, build_relu},
      {"Clip", 11, build_clip},  // v11: min/max became inputs
      {"LeakyRelu", 6, build_leaky_relu},
      {"Sigmoid", 6, build_sigmoid},
      {"HardSigmoid", 6, build_hard_sigmoid},
      {"HardSwish", 14, build_hard_swish},
      {"Identity", 1, build_identity},
  };
  return table;
}

}  // namespace refold::ops
