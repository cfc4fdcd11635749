#include "refold/graph/ops/binary.h"

#include "core/check.h"
#include "refold/functional.h"

namespace refold::graph::ops {

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

}  // namespace refold::graph::ops
