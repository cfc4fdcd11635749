// ONNX MaxPool and AveragePool as a graph op, for what nn::MaxPool2d / nn::AvgPool2d (PyTorch's
// rules) cannot express: asymmetric pads, auto_pad SAME, pads larger than half the kernel,
// ceil_mode, 1-d and 3-d (any spatial rank), MaxPool's Indices output. Runs
// functional::max_pool2d/avg_pool2d when the input is 4-d (or 3-d, seen as [N, C, 1, L]), no
// Indices are asked for and the pads resolved for the input are symmetric and at most half the
// kernel, else reference::pool
// (kernels/reference/onnx_ops.h, whose comment has the math).
#pragma once

#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "ops/window.h"
#include "refold/graph/op.h"

namespace refold::ops {

struct PoolAttributes {
  bool max = true;
  std::vector<std::int64_t> kernel;  // one per spatial axis (kernel_shape is required)
  WindowNd window;
  bool ceil_mode = false;
  bool count_include_pad = false;
  bool indices = false;       // MaxPool's second output is used
  bool column_major = false;  // storage_order = 1
};

class Pool : public graph::Op {
 public:
  explicit Pool(const PoolAttributes& attributes);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const PoolAttributes& attributes() const { return attributes_; }

 private:
  PoolAttributes attributes_;
};

}  // namespace refold::ops
