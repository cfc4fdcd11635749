// ONNX Concat as a graph op: joins its inputs along `axis` (negative counts from the end), any
// rank, float32/bfloat16 through functional::cat, int64 (shape arithmetic) exactly. The output
// is channels_last when every input suggests it, so a Concat(axis=1) of channels_last
// activations stays channels_last; inputs are read through their strides.
#pragma once

#include <cstdint>
#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

class Concat : public graph::Op {
 public:
  explicit Concat(std::int64_t axis) : Op("Concat"), axis_(axis) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  std::int64_t axis() const { return axis_; }

 private:
  std::int64_t axis_;
};

}  // namespace refold::ops
