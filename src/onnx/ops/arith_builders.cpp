// Add, Sub, Mul, Div: graph::ops::Binary (NumPy broadcasting, float and int64).
#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/reference/binary_checks.h"
#include "onnx/ops/cnn_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/binary.h"

namespace refold::onnx::ops {
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
    reference::detail::broadcast_shape(a.sizes(), b.sizes(), graph::ops::arith_op_name(op));
  }
  return std::make_shared<graph::ops::Binary>(op);
}

}  // namespace

nn::ModulePtr build_add(const BuildContext& c) { return build_arith(c, reference::ArithOp::Add); }
nn::ModulePtr build_sub(const BuildContext& c) { return build_arith(c, reference::ArithOp::Sub); }
nn::ModulePtr build_mul(const BuildContext& c) { return build_arith(c, reference::ArithOp::Mul); }
nn::ModulePtr build_div(const BuildContext& c) { return build_arith(c, reference::ArithOp::Div); }

}  // namespace refold::onnx::ops
