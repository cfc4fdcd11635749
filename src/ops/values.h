// ONNX Constant, Cast, Equal and Where as graph ops.
//
// refold's DType has no bool: a boolean tensor is int64 holding 0 or 1. Cast to bool gives
// x ≠ 0 → 1 (NaN → 1); Equal gives 0/1; Where's condition is true when ≠ 0. Cast to int32 is
// stored as int64 too, with int32's values: floats truncate toward zero (out of range is an
// error), int64 wraps to 32 bits. Cast float → int64 truncates toward zero; NaN, ±Inf and
// out-of-range values are errors rather than undefined behaviour.
//
//   Constant  no inputs; returns its tensor (the same handle each run).
//   Cast      to float32, bfloat16, int64, int32 (as int64) or bool (as int64 0/1).
//   Equal     (a, b) of one dtype, broadcast → int64 0/1.
//   Where     (condition, x, y), broadcast → condition ? x : y.
#pragma once

#include <vector>

#include "kernels/reference/tensor_ops.h"
#include "refold/graph/op.h"

namespace refold::ops {

class Constant : public graph::Op {
 public:
  explicit Constant(Tensor value);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const Tensor& value() const { return value_; }

 private:
  Tensor value_;
};

class Cast : public graph::Op {
 public:
  enum class To { Float32, BFloat16, Int64, Int32, Bool };
  explicit Cast(To to) : Op("Cast"), to_(to) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  To to() const { return to_; }

 private:
  To to_;
};

// Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor: bool (int64 0/1) results.
class Compare : public graph::Op {
 public:
  explicit Compare(reference::CompareOp op) : Op(reference::compare_name(op)), op_(op) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  reference::CompareOp op_;
};

class Not : public graph::Op {
 public:
  Not() : Op("Not") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
};

class Where : public graph::Op {
 public:
  Where() : Op("Where") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
};

}  // namespace refold::ops
