// ONNX Constant, Cast, CastLike, the comparisons and Where as graph ops.
//
// refold's DType has no bool: a boolean tensor is int64 holding 0 or 1. Cast to bool gives
// x ≠ 0 → 1 (NaN → 1); Equal gives 0/1; Where's condition is true when ≠ 0. Cast to int32 is
// stored as int64 too, with int32's values: floats truncate toward zero (out of range is an
// error), int64 wraps to 32 bits. Cast float → int64 truncates toward zero; NaN, ±Inf and
// out-of-range values are errors rather than undefined behaviour.
//
//   Constant  no inputs; returns its tensor (the same handle each run).
//   Cast      to float32, bfloat16, int64, int32 (as int64) or bool (as int64 0/1); CastLike
//             to its second input's dtype.
//   Compare   Equal, Less, …, And, Or, Xor: (a, b) of one dtype, broadcast → int64 0/1; Not.
//   Where     (condition, x, y), broadcast → condition ? x : y.
#pragma once

#include <optional>
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

// Cast to `to`; CastLike (to = nullopt) to the dtype of its second input.
class Cast : public graph::Op {
 public:
  explicit Cast(std::optional<reference::CastTarget> to) : Op(to ? "Cast" : "CastLike"), to_(to) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  std::optional<reference::CastTarget> to_;
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
