// ONNX Softmax, LogSoftmax and Hardmax as one graph op, both definitions:
//   opset ≥ 13  softmax along `axis` (default −1): y = exp(x − max) / Σ exp(x − max);
//   opset < 13  the input seen as 2-d [prod(sizes[:axis]), prod(sizes[axis:])] (default axis 1),
//               softmax over each row, i.e. over all dimensions from `axis` on.
// LogSoftmax is the log of it, Hardmax 1 at the first maximum (kernels/reference/tensor_ops.h).
// Softmax and LogSoftmax of float32 run native::softmax where it takes them, else the reference
// (computed in double, rounded once). The per-axis form reads any strides and keeps a
// channels_last input's format (accepts channels_last); the coerced form depends on the NCHW
// element order and does not. A second input c (canonicalize's AddSoftmax node, passes/
// add_softmax.h) makes it softmax(x + c), c broadcast as ONNX Add: native::softmax adds c as it
// reads x where it takes it, else the sum is made first.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/reference/tensor_ops.h"
#include "refold/graph/op.h"

namespace refold::ops {

class Softmax : public graph::Op {
 public:
  Softmax(std::string name, reference::SoftmaxKind kind, std::int64_t axis, bool coerce_2d)
      : Op(std::move(name)), kind_(kind), axis_(axis), coerce_2d_(coerce_2d) {}
  // inputs: x, optional addend c
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  bool accepts_channels_last() const override { return !coerce_2d_; }

 private:
  Tensor softmax(const Tensor& x, const Tensor& addend) const;

  reference::SoftmaxKind kind_;
  std::int64_t axis_;
  bool coerce_2d_;
};

}  // namespace refold::ops
