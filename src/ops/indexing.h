// The shape arithmetic exporters emit (torch.onnx's dynamic shapes, YOLO heads, …) as graph ops.
// They run on int64 and float tensors of any rank and strides, exactly: the constant folder
// runs them on constant inputs and keeps the results.
//
//   Shape            the input's sizes as int64[end − start]; start/end as Slice clamps them.
//   Gather           (data, indices): data.sizes[:axis] + indices.sizes + data.sizes[axis+1:];
//                    indices in [−size, size), checked.
//   Slice            (data, starts, ends, axes?, steps?) from opset 10, or the starts/ends/axes
//                    attributes before: per axis, negative start/end add the size, then clamp
//                    to [0, size] (step > 0) or [0, size − 1] / [−1, size − 1] (step < 0).
//   Expand           (input, shape): broadcast both ways (numpy), shape int64.
//   ConstantOfShape  (shape): filled with the one-element `value` (default float32 0).
//   Range            (start, limit, delta) scalars: start + k·delta for k < max(ceil((limit −
//                    start) / delta), 0).
//   ScatterND        (data, indices, updates), reduction none: data with
//                    data[indices[i.., :]] = updates[i..].
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "kernels/native/scatter_nd.h"

#include "ops/view_op.h"
#include "refold/graph/op.h"

namespace refold::ops {

class ShapeOf : public graph::Op {
 public:
  explicit ShapeOf(std::int64_t start = 0, std::optional<std::int64_t> end = std::nullopt)
      : Op("Shape"), start_(start), end_(end) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  std::int64_t start_;
  std::optional<std::int64_t> end_;
};

// ONNX Gather. Indices that step evenly upward (one index, qkv[0]; or i, i + s, i + 2s, …) select
// a strided slice of the axis: a view where the executor takes views (ops::ViewOp), else one
// copy; other indices copy rows (native::gather), or go through the reference.
class Gather : public ViewOp {
 public:
  explicit Gather(std::int64_t axis = 0) : ViewOp("Gather"), axis_(axis) {}
  std::int64_t axis() const { return axis_; }

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  std::int64_t axis_;
};

// The starts/ends/axes/steps of a Slice (from attributes or inputs).
struct SliceSpec {
  std::vector<std::int64_t> starts, ends, axes, steps;  // axes/steps empty: defaults
};

// A copy, or where the executor takes views (ops::ViewOp) a strided view for positive steps.
class Slice : public ViewOp {
 public:
  // `attributes`: the opset < 10 form; nullopt reads inputs 1–4.
  explicit Slice(std::optional<SliceSpec> attributes = std::nullopt)
      : ViewOp("Slice"), attributes_(std::move(attributes)) {}

 protected:
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  std::optional<SliceSpec> attributes_;
};

// Validates `spec` against a rank (lengths agree, axes in range and distinct, steps ≠ 0);
// rank < 0 checks only what needs no rank.
void check_slice_spec(const SliceSpec& spec, std::int64_t rank);
// With `view`, a view of data where the steps allow one (reference::slice_view).
Tensor slice(const Tensor& data, const SliceSpec& spec, bool view = false);

class Expand : public graph::Op {
 public:
  Expand() : Op("Expand") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
};

class ConstantOfShape : public graph::Op {
 public:
  // `value`: one element of any dtype; undefined means float32 0.
  explicit ConstantOfShape(Tensor value = {});
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const Tensor& value() const { return value_; }

 private:
  Tensor value_;
};

class Range : public graph::Op {
 public:
  Range() : Op("Range") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
};

class GatherND : public graph::Op {
 public:
  explicit GatherND(std::int64_t batch_dims) : Op("GatherND"), batch_dims_(batch_dims) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  std::int64_t batch_dims_;
};

// Runs native::scatter_nd's block copies (kernels/native/scatter_nd.h), the reference for what
// it declines. Where the indices are a constant of the graph (constant_indices), the plan made
// from them on the first run is kept for every later run with the same data sizes and the same
// indices tensor: the exporters' index tensors hold 4 int64 per element written, read once.
class ScatterND : public graph::Op {
 public:
  explicit ScatterND(bool constant_indices = false)
      : Op("ScatterND"), constant_indices_(constant_indices) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  std::shared_ptr<const native::ScatterPlan> plan_for(const Tensor& data, const Tensor& indices);

  bool constant_indices_;
  std::mutex mutex_;
  std::shared_ptr<const native::ScatterPlan> plan_;  // constant indices: the last plan made
  const void* plan_indices_ = nullptr;               // the indices storage it was made from
};

}  // namespace refold::ops
