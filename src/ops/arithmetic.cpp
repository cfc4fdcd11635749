// Add, Sub, Mul, Div: Binary (NumPy broadcasting, float and int64).
#include "ops/arithmetic.h"

#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/reference/binary_checks.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/functional.h"

namespace refold::ops {

std::string arith_op_name(reference::ArithOp op) {
  switch (op) {
    case reference::ArithOp::Add:
      return "Add";
    case reference::ArithOp::Sub:
      return "Sub";
    case reference::ArithOp::Mul:
      return "Mul";
    case reference::ArithOp::Div:
      return "Div";
  }
  return "?";
}

Binary::Binary(reference::ArithOp op) : Op(arith_op_name(op)), op_(op) {}

std::vector<Tensor> Binary::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 2, "{}: expects 2 inputs, got {}", type_name(), inputs.size());
  const Tensor& a = inputs[0];
  const Tensor& b = inputs[1];
  REFOLD_CHECK(a.defined() && b.defined(), "{}: an input is undefined", type_name());
  const bool floating = is_floating(a.dtype()) && a.dtype() == b.dtype();
  if (floating && op_ == reference::ArithOp::Add) return {functional::add(a, b)};
  if (floating && op_ == reference::ArithOp::Mul) return {functional::mul(a, b)};
  // a − b = a + (−1 · b) exactly: negation is exact in floating point (signed zeros included).
  if (floating && op_ == reference::ArithOp::Sub)
    return {functional::add(a, functional::mul(b, full({}, -1.0f, b.dtype())))};
  return {reference::arith(a, b, op_)};
}

namespace {

nn::ModulePtr build_arith(const BuildContext& context, reference::ArithOp op) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 2, 1);
  // Two constants: their shapes and dtypes are known now (F25).
  if (is_constant_input(context.graph, node, 0) && is_constant_input(context.graph, node, 1)) {
    const Tensor& a = context.graph.constant(node.inputs[0]);
    const Tensor& b = context.graph.constant(node.inputs[1]);
    REFOLD_CHECK(a.dtype() == b.dtype(), "A has dtype {} but B has {}", dtype_name(a.dtype()),
                 dtype_name(b.dtype()));
    reference::detail::broadcast_shape(a.sizes(), b.sizes(), arith_op_name(op));
  }
  return std::make_shared<Binary>(op);
}

}  // namespace

nn::ModulePtr build_add(const BuildContext& c) { return build_arith(c, reference::ArithOp::Add); }
nn::ModulePtr build_sub(const BuildContext& c) { return build_arith(c, reference::ArithOp::Sub); }
nn::ModulePtr build_mul(const BuildContext& c) { return build_arith(c, reference::ArithOp::Mul); }
nn::ModulePtr build_div(const BuildContext& c) { return build_arith(c, reference::ArithOp::Div); }

const std::vector<OpDef>& arithmetic_ops() {
  static const std::vector<OpDef> table = {
      // v7 onwards: NumPy broadcasting (v6 had the `broadcast`/`axis` attributes).
      {"Add", 7, build_add, LayoutRule::FirstNonConstant},
      {"Sub", 7, build_sub, LayoutRule::FirstNonConstant},
      {"Mul", 7, build_mul, LayoutRule::FirstNonConstant},
      {"Div", 7, build_div, LayoutRule::FirstNonConstant},
  };
  return table;
}

}  // namespace refold::ops
