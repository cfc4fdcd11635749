// ONNX MaxPool and AveragePool as a graph op, for what nn::MaxPool2d / nn::AvgPool2d (PyTorch's
// rules) cannot express: asymmetric pads, auto_pad SAME, pads larger than half the kernel,
// ceil_mode. Runs functional::max_pool2d/avg_pool2d when the pads resolved for the input are
// symmetric and at most half the kernel, else reference::pool2d (kernels/reference/onnx_ops.h,
// whose comment has the math).
#pragma once

#include <vector>

#include "kernels/reference/onnx_ops.h"
#include "ops/window.h"
#include "refold/graph/op.h"

namespace refold::ops {

struct PoolAttributes {
  bool max = true;
  Size2d kernel = 1;
  Size2d stride = 1;
  Size2d dilation = 1;
  WindowPadding padding;
  bool ceil_mode = false;
  bool count_include_pad = false;
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
