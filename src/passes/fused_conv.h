// The module of a fused Conv + Add (+ activation) node, made by the activation-fusion pass:
//
//   y = chain(conv(x) + b, r)       inputs [x, W, B or "", r, K…]; W, B and the constants K of
//                                   the chain's steps are listed so that dead-code and the
//                                   exporter still see them
//
// It wraps the fused node's own nn::Conv2d (registered as child "conv", so
// convert_conv2d_weight_memory_format and the layout pass reach its weight) whose activation is
// the chain (refold/post_ops.h: the residual added before the activation or by a step). When `r`
// has the conv output's sizes and dtype it runs one primitive, Conv2d::forward_with_residual.
// Otherwise (the Add broadcast r, or r's dtype differs) it runs the unfused steps — the conv,
// then the chain with ONNX Add exactly as the Add node did (same operand order) — so the node
// always computes what the nodes it replaced computed.
#pragma once

#include <memory>
#include <vector>

#include "refold/graph/op.h"
#include "refold/nn/conv.h"

namespace refold::passes {

class FusedConvAdd : public graph::Op {
 public:
  // `conv_first`: the Add read the conv's output as its first operand (Add(conv, r)).
  FusedConvAdd(std::shared_ptr<nn::Conv2d> conv, bool conv_first);

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  // A residual handed over (the only handle on it) is overwritten by the result.
  std::vector<Tensor> run_consuming(std::vector<Tensor>& inputs) override;

  const std::shared_ptr<nn::Conv2d>& conv() const { return conv_; }
  bool conv_first() const { return conv_first_; }

 private:
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, bool overwrite_residual);

  std::shared_ptr<nn::Conv2d> conv_;
  bool conv_first_;
};

}  // namespace refold::passes
