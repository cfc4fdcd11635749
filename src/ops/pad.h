// ONNX Pad: opset 11+ takes pads, constant_value and (opset 18) axes as inputs; opsets 2–10 take
// the `pads` and `value` attributes. Modes constant, reflect, edge and wrap (opset 19).
//   pads = [x1_begin, x2_begin, …, x1_end, x2_end, …] over `axes` (all axes when absent);
//   negative values crop (first, so reflect/edge/wrap read the cropped dimension).
// Float32 in every mode runs native::onnx_pad (kernels/native/pad.h), which keeps the input's
// layout; other dtypes and what it declines run reference::onnx_pad
// (kernels/reference/tensor_ops.h), which keeps it too.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kernels/reference/tensor_ops.h"
#include "refold/graph/op.h"

namespace refold::ops {

class Pad : public graph::Op {
 public:
  // `pads`: the attribute form (opset < 11, with `value`); nullopt reads the inputs.
  explicit Pad(reference::PadMode mode = reference::PadMode::Constant,
               std::optional<std::vector<std::int64_t>> pads = std::nullopt, double value = 0.0)
      : Op("Pad"), mode_(mode), pads_(std::move(pads)), value_(value) {}
  // inputs: data, pads (int64 1-d), optional constant_value (scalar), optional axes (int64);
  // or data alone in the attribute form.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  reference::PadMode mode_;
  std::optional<std::vector<std::int64_t>> pads_;
  double value_;
};

}  // namespace refold::ops
