// The module of a fused elementwise chain that does not follow a conv, made by the
// activation-fusion pass (BatchNormalization → Relu, Mul → Add → Sigmoid, …):
//
//   y = chain(x, r)      inputs [x, r or "", K…]; the constants K of the chain's steps are
//                        listed so that the node reads what its parts read
//
// chain is a PostOps without a conv (refold/post_ops.h): the head's activation (and the residual
// r before it) or steps act(y·scale + shift [+ r]). When r has x's sizes and dtype (or there is
// none) it runs native::elementwise_chain, one pass over memory, with the reference's
// apply_post_ops where that declines; otherwise (the Add broadcast r) the reference chain with
// ONNX Add in the Add's operand order — always what the nodes it replaced computed.
#pragma once

#include <cstddef>
#include <vector>

#include "refold/graph/op.h"
#include "refold/post_ops.h"

namespace refold::passes {

class ElementwiseChain : public graph::Op {
 public:
  // `x_first`: the residual's Add read the chain as its first operand (Add(chain, r)).
  ElementwiseChain(PostOps post, bool x_first);

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

  const PostOps& post_ops() const { return post_; }

 private:
  PostOps post_;  // without the residual (an input at run time)
  bool x_first_;
};

// A channel concat with the chain after it, made by the same pass where a Concat along C is
// the chain's only input (DenseNet's Concat → BatchNormalization → Relu before each layer):
//
//   y = chain(concat(x_1 … x_n, axis 1))   inputs [x_1 … x_n, K…], 4-d
//
// one pass over memory (native::concat_chain, each input read once and the result written
// once) instead of two. The chain has no residual.
class ConcatChain : public graph::Op {
 public:
  ConcatChain(std::size_t count, PostOps post);

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

  const PostOps& post_ops() const { return post_; }

 private:
  std::size_t count_;  // the concat's inputs, first in the node's
  PostOps post_;
};

}  // namespace refold::passes
