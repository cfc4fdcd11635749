// Element-wise activations: the nn module of the same function when there is one, else a
// graph op (Clip with other bounds, HardSigmoid with ONNX's default alpha/beta), which runs
// refold's native clamp (kernels/native/clamp.h), the reference for what it declines.
#include "ops/activation.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <optional>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/clamp.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"

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
  // An absent bound is ±∞ for the native kernel; a bound beyond float32's range is one too.
  const auto bound = [](std::optional<double> v, float absent) {
    return v ? static_cast<float>(*v) : absent;
  };
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return {dispatch("Clip",
                   {{"native",
                     [&](std::string* declined) {
                       return native::clamp("Clip", in[0], 1.0f, 0.0f, bound(lo, -kInf),
                                            bound(hi, kInf), declined);
                     }}},
                   [&] { return reference::clip(in[0], lo, hi); })};
}

std::vector<Tensor> HardSigmoid::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 1 && in[0].defined(), "HardSigmoid: expects 1 input, got {}",
               in.size());
  return {dispatch("HardSigmoid",
                   {{"native",
                     [&](std::string* declined) {
                       return native::clamp("HardSigmoid", in[0], alpha_, beta_, 0.0f, 1.0f,
                                            declined);
                     }}},
                   [&] { return reference::hard_sigmoid(in[0], alpha_, beta_); })};
}

namespace {

void check_unary(const graph::Node& node) { check_arity(node, 1, 1, 1); }

float finite_float(const graph::Attributes& a, const std::string& name, float fallback) {
  const float v = a.get_float(name, fallback);
  REFOLD_CHECK(std::isfinite(v), "{} must be finite (got {})", name, v);
  return v;
}

// ---- as a conv's post-op (OpDef::as_activation, read by passes/activation_fusion.cpp) ----

// PyTorch's Hardsigmoid is relu6(x + 3) / 6 = clamp(x/6 + 1/2, 0, 1): ONNX alpha = 1/6 (the
// float PyTorch's exporter writes is within 1e-7 of it), beta = 1/2.
bool is_pytorch_hard_sigmoid(double alpha, double beta) {
  return std::abs(alpha - 1.0 / 6.0) <= 1e-7 && beta == 0.5;
}

// Clip's bounds (inputs 1 and 2, opset ≥ 11) when both are absent or constant scalars; else
// sets `problem`. Absent = unbounded.
struct ClipBounds {
  std::optional<double> lo, hi;
};
std::optional<ClipBounds> constant_clip_bounds(const graph::Graph& graph, const graph::Node& node,
                                               std::string& problem) {
  ClipBounds bounds;
  for (std::size_t i : {1, 2}) {
    const std::string name = input_name(node, i);
    if (name.empty()) continue;
    if (!graph.is_constant(name)) {
      problem = fmt::format("Clip bound '{}' is computed at run time", name);
      return std::nullopt;
    }
    const Tensor& t = graph.constant(name);
    if (t.numel() != 1) {
      problem = fmt::format("Clip bound '{}' is not a scalar ({})", name, t.description());
      return std::nullopt;
    }
    (i == 1 ? bounds.lo : bounds.hi) = scalar_bound(t, "Clip", i == 1 ? "min" : "max");
  }
  return bounds;
}

template <Activation kind>
std::optional<FusedActivation> fixed_activation(const graph::Graph&, const graph::Node&,
                                                std::string&) {
  return FusedActivation{kind};
}

std::optional<FusedActivation> leaky_relu_activation(const graph::Graph&, const graph::Node& node,
                                                     std::string&) {
  return FusedActivation{Activation::LeakyReLU, node.attributes.get_float("alpha", 0.01f)};
}

std::optional<FusedActivation> hard_sigmoid_activation(const graph::Graph&, const graph::Node& node,
                                                       std::string& problem) {
  // ONNX: max(0, min(1, alpha·x + beta)); only PyTorch's constants have a post-op.
  const double alpha = node.attributes.get_float("alpha", 0.2f);
  const double beta = node.attributes.get_float("beta", 0.5f);
  if (is_pytorch_hard_sigmoid(alpha, beta)) return FusedActivation{Activation::HardSigmoid};
  problem = fmt::format("alpha {} and beta {}, not PyTorch's 1/6 and 0.5", alpha, beta);
  return std::nullopt;
}

// The activations PyTorch exports as Clip: relu6 = Clip(0, 6), relu = Clip(0) or Clip(0, +inf).
std::optional<FusedActivation> clip_activation(const graph::Graph& graph, const graph::Node& node,
                                               std::string& problem) {
  const auto bounds = constant_clip_bounds(graph, node, problem);
  if (!bounds) return std::nullopt;
  const auto [lo, hi] = *bounds;
  if (lo == 0.0 && hi == 6.0) return FusedActivation{Activation::ReLU6};
  if (lo == 0.0 && (!hi || (std::isinf(*hi) && *hi > 0))) return FusedActivation{Activation::ReLU};
  problem = fmt::format("clips to [{}, {}], neither relu nor relu6",
                        lo ? fmt::format("{}", *lo) : "-inf", hi ? fmt::format("{}", *hi) : "inf");
  return std::nullopt;
}

// ---- builders ----

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

// Dropout at inference is the identity; its optional mask output is all true. A training_mode
// input that is a constant true is refused (refold runs inference only).
// Dropout's training_mode input: a 1-element tensor that is not 0 asks for training.
void check_not_training(const Tensor& training_mode) {
  if (training_mode.defined() && training_mode.numel() == 1)
    REFOLD_CHECK(*training_mode.to(DType::Int64).data<std::int64_t>() == 0,
                 "unsupported: training_mode is true (refold runs inference only)");
}

class Dropout : public graph::Op {
 public:
  explicit Dropout(bool mask) : Op("Dropout"), mask_(mask) {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(!in.empty() && in[0].defined(), "Dropout: data is missing");
    if (in.size() > 2) check_not_training(in[2]);
    if (!mask_) return {in[0]};
    return {in[0], full(in[0].sizes(), 1.0f, DType::Int64)};
  }

 private:
  bool mask_;
};

nn::ModulePtr build_dropout(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 3, 2);
  if (const auto training = constant_input(context, 2)) check_not_training(*training);
  const bool mask = node.outputs.size() > 1 && !node.outputs[1].empty();
  if (!mask && node.inputs.size() <= 1) return std::make_shared<nn::Identity>();
  return std::make_shared<Dropout>(mask);
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
  if (is_pytorch_hard_sigmoid(alpha, beta)) return std::make_shared<nn::Hardsigmoid>();
  return std::make_shared<HardSigmoid>(alpha, beta);
}

nn::ModulePtr build_clip(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 3, 1);
  // A constant bound must be a scalar: refused here, naming it, rather than at run time.
  for (std::size_t i : {1, 2}) {
    if (is_constant_input(context.graph, node, i))
      scalar_bound(context.graph.constant(node.inputs[i]), "Clip", i == 1 ? "min" : "max");
  }
  std::string problem;
  const auto activation = clip_activation(context.graph, node, problem);
  if (activation && activation->activation == Activation::ReLU6)
    return std::make_shared<nn::ReLU6>();
  if (activation && activation->activation == Activation::ReLU) return std::make_shared<nn::ReLU>();
  return std::make_shared<Clip>();
}

}  // namespace

const std::vector<OpDef>& activation_ops() {
  static const std::vector<OpDef> table = {
      {"Relu", 6, build_relu, LayoutRule::FirstInput, fixed_activation<Activation::ReLU>},
      {"Clip", 11, build_clip, LayoutRule::FirstInput, clip_activation},  // v11: bounds as inputs
      {"LeakyRelu", 6, build_leaky_relu, LayoutRule::FirstInput, leaky_relu_activation},
      {"Sigmoid", 6, build_sigmoid, LayoutRule::FirstInput, fixed_activation<Activation::Sigmoid>},
      {"HardSigmoid", 6, build_hard_sigmoid, LayoutRule::FirstInput, hard_sigmoid_activation},
      {"HardSwish", 14, build_hard_swish, LayoutRule::FirstInput,
       fixed_activation<Activation::HardSwish>},
      {"Identity", 1, build_identity},
      {"Dropout", 7, build_dropout},  // v7: no is_test; v12: ratio and training_mode inputs
  };
  return table;
}

}  // namespace refold::ops
