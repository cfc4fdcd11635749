// Element-wise math: ONNX's unary functions (Abs … Atanh, Erf, Gelu, Elu, Selu, Mish, …) and
// Pow, one graph op over reference::unary with oneDNN's eltwise as the fast path where it has
// the function. Layout: the output keeps the input's format (FirstInput), NHWC included.
#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/onednn/eltwise.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "refold/graph/op.h"

namespace refold::ops {
namespace {

using reference::UnaryOp;

class Unary : public graph::Op {
 public:
  Unary(UnaryOp op, double alpha = 0.0, double beta = 0.0)
      : Op(std::string(reference::unary_name(op))), op_(op), alpha_(alpha), beta_(beta) {}

  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 1 && in[0].defined(), "{}: expects 1 input, got {}", type_name(),
                 in.size());
    return {apply(op_, in[0], alpha_, beta_)};
  }

  static Tensor apply(UnaryOp op, const Tensor& x, double alpha, double beta) {
    return dispatch(
        reference::unary_name(op),
        {{"onednn",
          [&](std::string* declined) { return onednn::unary(op, x, alpha, beta, declined); }}},
        [&] { return reference::unary(x, op, alpha, beta); });
  }

 private:
  UnaryOp op_;
  double alpha_, beta_;
};

// Pow(X, Y) = X^Y, NumPy broadcasting. A scalar exponent runs as the unary function x^y; any
// other as the element-wise reference.
class Pow : public graph::Op {
 public:
  Pow() : Op("Pow") {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 2 && in[0].defined() && in[1].defined(),
                 "Pow: expects X and Y, got {} inputs", in.size());
    const Tensor& x = in[0];
    const Tensor& y = in[1];
    if (y.numel() == 1 && y.dim() <= x.dim() && is_floating(x.dtype())) {
      const double exponent = y.dtype() == DType::Int64
                                  ? static_cast<double>(*y.data<std::int64_t>())
                                  : static_cast<double>(y.item());
      return {Unary::apply(UnaryOp::Pow, x, exponent, 0.0)};
    }
    if (x.dtype() == y.dtype()) return {reference::arith(x, y, reference::ArithOp::Pow)};
    // Mixed types (ONNX allows any pair): an integer exponent of a float base is converted to
    // the base's dtype; an integer base with a float exponent is raised in float32 and the result
    // truncated back to int64, as ONNX's reference implementation does.
    if (is_floating(x.dtype()))
      return {reference::arith(x, reference::cast(y, reference::CastTarget::Float32).to(x.dtype()),
                               reference::ArithOp::Pow)};
    const Tensor z = reference::arith(reference::cast(x, reference::CastTarget::Float32),
                                      reference::cast(y, reference::CastTarget::Float32),
                                      reference::ArithOp::Pow);
    return {reference::cast(z, reference::CastTarget::Int64)};
  }
};

float finite_attribute(const graph::Node& node, const char* name, float fallback) {
  const float v = node.attributes.get_float(name, fallback);
  REFOLD_CHECK(std::isfinite(v), "{} must be finite (got {})", name, v);
  return v;
}

template <UnaryOp op>
nn::ModulePtr build_plain(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  return std::make_shared<Unary>(op);
}

// Elu, Celu, ThresholdedRelu: one parameter alpha (default 1).
template <UnaryOp op>
nn::ModulePtr build_with_alpha(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const float alpha = finite_attribute(context.node, "alpha", 1.0f);
  REFOLD_CHECK(op != UnaryOp::Celu || alpha != 0.0f, "Celu's alpha must not be 0");
  return std::make_shared<Unary>(op, alpha);
}

nn::ModulePtr build_selu(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  // ONNX's defaults: the constants of the SELU paper, as float32.
  const float alpha = finite_attribute(context.node, "alpha", 1.67326319217681884765625f);
  const float gamma = finite_attribute(context.node, "gamma", 1.05070102214813232421875f);
  return std::make_shared<Unary>(UnaryOp::Selu, alpha, gamma);
}

nn::ModulePtr build_gelu(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const std::string approximate = context.node.attributes.get_string("approximate", "none");
  REFOLD_CHECK(approximate == "none" || approximate == "tanh",
               "approximate must be 'none' or 'tanh' (got '{}')", approximate);
  return std::make_shared<Unary>(approximate == "tanh" ? UnaryOp::GeluTanh : UnaryOp::Gelu);
}

// Gelu as a conv's post-op: the exact (erf) form or the tanh approximation.
std::optional<FusedActivation> gelu_activation(const graph::Graph&, const graph::Node& node,
                                               std::string&) {
  const std::string approximate = node.attributes.get_string("approximate", "none");
  return FusedActivation{approximate == "tanh" ? Activation::GELUTanh : Activation::GELU};
}

nn::ModulePtr build_pow(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<Pow>();
}

}  // namespace

const std::vector<OpDef>& unary_ops() {
  // min_opset: the version whose semantics refold implements (later versions only add types).
  static const std::vector<OpDef> table = {
      {"Abs", 6, build_plain<UnaryOp::Abs>},
      {"Neg", 6, build_plain<UnaryOp::Neg>},
      {"Sign", 9, build_plain<UnaryOp::Sign>},
      {"Floor", 6, build_plain<UnaryOp::Floor>},
      {"Ceil", 6, build_plain<UnaryOp::Ceil>},
      {"Round", 11, build_plain<UnaryOp::Round>},
      {"Reciprocal", 6, build_plain<UnaryOp::Reciprocal>},
      {"Sqrt", 6, build_plain<UnaryOp::Sqrt>},
      {"Exp", 6, build_plain<UnaryOp::Exp>},
      {"Log", 6, build_plain<UnaryOp::Log>},
      {"Erf", 9, build_plain<UnaryOp::Erf>},
      {"Tanh", 6, build_plain<UnaryOp::Tanh>},
      {"Sin", 7, build_plain<UnaryOp::Sin>},
      {"Cos", 7, build_plain<UnaryOp::Cos>},
      {"Tan", 7, build_plain<UnaryOp::Tan>},
      {"Asin", 7, build_plain<UnaryOp::Asin>},
      {"Acos", 7, build_plain<UnaryOp::Acos>},
      {"Atan", 7, build_plain<UnaryOp::Atan>},
      {"Sinh", 9, build_plain<UnaryOp::Sinh>},
      {"Cosh", 9, build_plain<UnaryOp::Cosh>},
      {"Asinh", 9, build_plain<UnaryOp::Asinh>},
      {"Acosh", 9, build_plain<UnaryOp::Acosh>},
      {"Atanh", 9, build_plain<UnaryOp::Atanh>},
      {"Softplus", 1, build_plain<UnaryOp::Softplus>},
      {"Softsign", 1, build_plain<UnaryOp::Softsign>},
      {"Mish", 18, build_plain<UnaryOp::Mish>},
      {"Gelu", 20, build_gelu, LayoutRule::FirstInput, gelu_activation},
      {"Elu", 6, build_with_alpha<UnaryOp::Elu>},
      {"Selu", 6, build_selu},
      {"Celu", 12, build_with_alpha<UnaryOp::Celu>},
      {"ThresholdedRelu", 10, build_with_alpha<UnaryOp::ThresholdedRelu>},
      {"Pow", 7, build_pow, LayoutRule::FirstInput},  // the output has X's format
  };
  return table;
}

}  // namespace refold::ops
