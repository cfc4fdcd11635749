// ops::ViewOp — the base of the ops that only move data (Transpose, Slice, Split, Reshape,
// Flatten, Squeeze, Unsqueeze, canonicalize's Rearrange): each output element is an input
// element, so each output can be a view of the input (graph::Op::reads_views). Such an op reads
// any strides, and computes its outputs once, in moved(): with `views`, an output may be a view
// of an input dense in no memory format (the executor then hands it only to ops that read
// views: other ViewOps, MatMul); without, every output is dense, as the other ops expect. A
// chain such as MobileViT's or EfficientViT's attention reshapes, Reshape → Transpose → Slice,
// so copies once, at its last op.
#pragma once

#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

class ViewOp : public graph::Op {
 public:
  using graph::Op::Op;
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) final { return logged(inputs, false); }
  std::vector<Tensor> run_views(std::vector<Tensor>& inputs) final { return logged(inputs, true); }
  bool reads_views() const final { return true; }

 protected:
  virtual std::vector<Tensor> moved(const std::vector<Tensor>& inputs, bool views) const = 0;

 private:
  // moved(), reported as what ran (REFOLD_VERBOSE, the profile): "view" when every output is a
  // view of an input, "copy" otherwise — unless a kernel it called named itself.
  std::vector<Tensor> logged(const std::vector<Tensor>& inputs, bool views) const;
};

// `dense` (contiguous, or channels_last 4-d) with that format's own strides: the same memory, but
// each size-1 dim given the stride the format gives it rather than one left over from a view —
// the form the ops that do not read views are handed.
Tensor with_format_strides(const Tensor& dense);

// `sizes` over x's elements in logical order: a view of x with whatever strides express it
// when `views` allows one (Tensor::view), else contiguous — x itself viewed when contiguous,
// else x made contiguous first (functional::to_format's permute for a channels_last x).
Tensor reshaped(const Tensor& x, const Shape& sizes, bool views);

}  // namespace refold::ops
