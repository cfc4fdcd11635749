// ONNX Pad (opset 11+: pads, constant_value and, from opset 18, axes are inputs), constant mode.
//   pads = [x1_begin, x2_begin, …, x1_end, x2_end, …] over `axes` (all axes when absent);
//   negative values crop. Runs functional::pad, which keeps the input's layout.
#pragma once

#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

class Pad : public graph::Op {
 public:
  Pad() : Op("Pad") {}
  // inputs: data, pads (int64 1-d), optional constant_value (scalar), optional axes (int64)
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
};

}  // namespace refold::ops
