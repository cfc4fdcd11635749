// ONNX Concat and Split.
//
// Concat as a graph op: joins its inputs along `axis` (negative counts from the end), any
// rank, float32/bfloat16 through functional::cat, int64 (shape arithmetic) exactly. The output
// is channels_last when every input suggests it, so a Concat(axis=1) of channels_last
// activations stays channels_last. Inputs are read through their strides, so it reads views
// (graph::Op::reads_views): torch.roll's Slices, or a detection head's NHWC maps reshaped to
// [N, C, H·W], reach it uncopied and are copied once, into their place in the output.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ops/view_op.h"
#include "refold/graph/op.h"

namespace refold::ops {

class Concat : public graph::Op {
 public:
  explicit Concat(std::int64_t axis) : Op("Concat"), axis_(axis) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool reads_views() const override { return true; }
  std::int64_t axis() const { return axis_; }

 private:
  std::int64_t axis_;
};

// ONNX Split: `input` cut along `axis` into one piece per output, each a copy in the input's
// memory format (a channel split of a channels_last tensor stays channels_last). The lengths:
//   `split` (an attribute before opset 13, an optional int64 input from then on), summing to
//   the axis' size; else, with num_outputs (opset 18+), ⌈size / n⌉ each and the rest last;
//   else equal pieces, which must divide the axis exactly.
class Split : public ViewOp {
 public:
  // `lengths`: the split attribute, or nullopt (read input 1, else split evenly).
  Split(std::int64_t axis, std::size_t outputs, std::optional<std::vector<std::int64_t>> lengths,
        bool uneven_last)
      : ViewOp("Split"),
        axis_(axis),
        outputs_(outputs),
        lengths_(std::move(lengths)),
        uneven_last_(uneven_last) {}

 protected:
  // Copies, or where the executor takes views (ops::ViewOp) a view of each piece.
  std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const override;

 private:
  std::vector<std::int64_t> lengths(std::int64_t size, const Tensor& split_input) const;

  std::int64_t axis_;
  std::size_t outputs_;
  std::optional<std::vector<std::int64_t>> lengths_;
  bool uneven_last_;
};

}  // namespace refold::ops
