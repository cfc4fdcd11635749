// The module of a fused linear product + residual Add (+ activation) node, made by the
// activation-fusion pass:
//
//   y = act(x·Wᵀ + b + r)     inputs [x, W, B or "", r]; W and B are listed so that dead-code
//                             and the exporter still see them
//
// It wraps the node's own nn::Linear (registered as child "linear") whose activation is the
// chain's. When `r` has the product's sizes and dtype it runs one oneDNN matmul with the
// residual and the activation as post-ops (Linear::forward_with_residual). Otherwise (the Add
// broadcast r, or r's dtype differs) it runs the unfused steps — the product, ONNX Add in the
// Add's operand order, the activation — so the node always computes what the nodes it replaced
// computed.
#pragma once

#include <memory>
#include <vector>

#include "refold/graph/op.h"
#include "refold/nn/linear.h"

namespace refold::passes {

class FusedLinearAdd : public graph::Op {
 public:
  // `linear_first`: the Add read the product as its first operand (Add(x·Wᵀ + b, r)).
  FusedLinearAdd(std::shared_ptr<nn::Linear> linear, bool linear_first);

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

  const std::shared_ptr<nn::Linear>& linear() const { return linear_; }
  bool linear_first() const { return linear_first_; }

 private:
  std::shared_ptr<nn::Linear> linear_;
  bool linear_first_;
};

}  // namespace refold::passes
