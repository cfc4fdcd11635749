// ONNX Add, Sub, Mul and Div as graph ops: NumPy broadcasting over any rank, float32/bfloat16
// and int64 (the shape arithmetic of exported models computes in int64).
//
//   float Add/Mul → functional::add/mul (oneDNN where it applies, the reference otherwise), and
//   float Sub as a + (−1 · b), exact;
//   everything else → reference::arith (kernels/reference/onnx_ops.h): int64 wraps on overflow, Div
//   truncates toward zero and rejects a zero divisor.
// The result takes the layout of the first input that has the output's shape.
#pragma once

#include <string>
#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "refold/graph/op.h"

namespace refold::ops {

class Binary : public graph::Op {
 public:
  explicit Binary(reference::ArithOp op);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  reference::ArithOp op() const { return op_; }

 private:
  reference::ArithOp op_;
};

}  // namespace refold::ops
