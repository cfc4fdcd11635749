// Add, Sub, Mul, Div: Binary (NumPy broadcasting, float and int64); Max, Min, Sum, Mean:
// Variadic, the same element-wise ops folded over 1…N inputs.
#include "ops/arithmetic.h"

#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/reference/binary_checks.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/functional.h"

namespace refold::ops {

Binary::Binary(reference::ArithOp op) : Op(reference::arith_name(op)), op_(op) {}

std::vector<Tensor> Binary::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 2, "{}: expects 2 inputs, got {}", type_name(), inputs.size());
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  REFOLD_CHECK(a.defined() && b.defined(), "{}: an input is undefined", type_name());
  const bool floating = is_floating(a.dtype()) && a.dtype() == b.dtype();
  if (floating && op_ == reference::ArithOp::Add) return {functional::add(a, b)};
  if (floating && op_ == reference::ArithOp::Mul) return {functional::mul(a, b)};
  if (floating && op_ == reference::ArithOp::Sub) return {functional::sub(a, b)};
  if (floating && op_ == reference::ArithOp::Div) return {functional::div(a, b)};
  return {reference::arith(a, b, op_)};
}

namespace {

// Max, Min, Sum (1…N inputs, all broadcast together): ((x₀ ∘ x₁) ∘ x₂) ∘ …; Mean = Sum / N.
class Variadic : public graph::Op {
 public:
  Variadic(std::string name, reference::ArithOp op, bool mean)
      : Op(std::move(name)), op_(op), mean_(mean) {}

  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(!in.empty(), "{}: expects at least 1 input", type_name());
    for (std::size_t i = 0; i < in.size(); ++i)
      REFOLD_CHECK(in[i].defined(), "{}: input {} is undefined", type_name(), i);
    Binary step(op_);
    Tensor result = in[0];
    for (std::size_t i = 1; i < in.size(); ++i) result = step.run({result, in[i]})[0];
    if (mean_) {
      const Tensor n = full({}, static_cast<float>(in.size()), result.dtype());
      result = reference::arith(result, n, reference::ArithOp::Div);
    }
    return {result};
  }

 private:
  reference::ArithOp op_;
  bool mean_;
};

template <reference::ArithOp op, bool mean = false>
nn::ModulePtr build_variadic(const BuildContext& context) {
  check_arity(context.node, 1, context.node.inputs.size() + 1, 1);
  for (std::size_t i = 0; i < context.node.inputs.size(); ++i)
    REFOLD_CHECK(!context.node.inputs[i].empty(), "input {} is empty; every input is required", i);
  return std::make_shared<Variadic>(context.node.op_type, op, mean);
}

nn::ModulePtr build_arith(const BuildContext& context, reference::ArithOp op) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 2, 1);
  // Two constants: their shapes and dtypes are known now (F25).
  if (is_constant_input(context.graph, node, 0) && is_constant_input(context.graph, node, 1)) {
    const Tensor& a = context.graph.constant(node.inputs[0]);
    const Tensor& b = context.graph.constant(node.inputs[1]);
    REFOLD_CHECK(a.dtype() == b.dtype(), "A has dtype {} but B has {}", dtype_name(a.dtype()),
                 dtype_name(b.dtype()));
    reference::detail::broadcast_shape(a.sizes(), b.sizes(), reference::arith_name(op));
  }
  return std::make_shared<Binary>(op);
}

}  // namespace

nn::ModulePtr build_prelu(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<Binary>(reference::ArithOp::PRelu);
}

// fmod = 0: the remainder takes the divisor's sign (integers only, as ONNX requires);
// fmod = 1: the dividend's sign, as C's fmod.
nn::ModulePtr build_mod(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  const std::int64_t fmod = context.node.attributes.get_int("fmod", 0);
  REFOLD_CHECK(fmod == 0 || fmod == 1, "fmod must be 0 or 1 (got {})", fmod);
  const int elem_type = declared_elem_type(context, 0);
  // ONNX integer type codes: uint8 2, int8 3, uint16 4, int16 5, int32 6, int64 7, uint32 12,
  // uint64 13 (refold holds them all as int64).
  const bool integer =
      elem_type == 0 || (elem_type >= 2 && elem_type <= 7) || elem_type == 12 || elem_type == 13;
  REFOLD_CHECK(fmod == 1 || integer,
               "fmod = 0 is for integers; input '{}' has ONNX element type {} (set fmod = 1)",
               context.node.inputs[0], elem_type);
  return std::make_shared<Binary>(fmod == 1 ? reference::ArithOp::FMod : reference::ArithOp::Mod);
}

nn::ModulePtr build_add(const BuildContext& c) { return build_arith(c, reference::ArithOp::Add); }
nn::ModulePtr build_sub(const BuildContext& c) { return build_arith(c, reference::ArithOp::Sub); }
nn::ModulePtr build_mul(const BuildContext& c) { return build_arith(c, reference::ArithOp::Mul); }
nn::ModulePtr build_div(const BuildContext& c) { return build_arith(c, reference::ArithOp::Div); }

const std::vector<OpDef>& arithmetic_ops() {
  static const std::vector<OpDef> table = {
      // v7 onwards: NumPy broadcasting (v6 had the `broadcast`/`axis` attributes).
      {"Add", 7, build_add, LayoutRule::Broadcasting},
      {"Sub", 7, build_sub, LayoutRule::Broadcasting},
      {"Mul", 7, build_mul, LayoutRule::Broadcasting},
      {"Div", 7, build_div, LayoutRule::Broadcasting},
      // v9: the slope broadcasts to X (unidirectionally); the output has X's format.
      {"PRelu", 9, build_prelu, LayoutRule::FirstInput},
      {"Mod", 10, build_mod, LayoutRule::Broadcasting},
      // v8 onwards: the inputs broadcast (v6 required equal shapes).
      {"Max", 8, build_variadic<reference::ArithOp::Max>, LayoutRule::Broadcasting},
      {"Min", 8, build_variadic<reference::ArithOp::Min>, LayoutRule::Broadcasting},
      {"Sum", 8, build_variadic<reference::ArithOp::Add>, LayoutRule::Broadcasting},
      {"Mean", 8, build_variadic<reference::ArithOp::Add, true>, LayoutRule::Broadcasting},
  };
  return table;
}

}  // namespace refold::ops
