// refold::graph::Op — a Module with several inputs and outputs, for graph nodes that are not a
// plain single-input layer: Add, Concat, Reshape with a runtime shape, Conv with runtime
// weights (the ONNX node tests pass weights as inputs), the shape arithmetic, …
//
//   class Sub : public graph::Op {
//    public:
//     Sub() : Op("Sub") {}
//     std::vector<Tensor> run(const std::vector<Tensor>& in) override { … }
//   };
//
// run() receives every node input in order; an optional input left out ("") arrives as an
// undefined Tensor. It returns one Tensor per node output. Inputs follow the module's
// accepts_channels_last() (the executor makes them contiguous when it returns false), so an op
// that accepts channels_last must be correct for any strides: sizes are always logical NCHW.
#pragma once

#include <string>
#include <vector>

#include "refold/nn/module.h"
#include "refold/tensor.h"

namespace refold::graph {

class Op : public nn::Module {
 public:
  using nn::Module::Module;
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) = 0;
  // run(), as the graph executor calls it: an input the executor will not read again and holds
  // the only handle on (refold's own memory, no other view of it) is handed over in `inputs`,
  // and the op may write over it, reusing its memory for an output (FusedConvAdd adds its
  // residual in place). Afterwards the executor reads only the inputs' sizes and layout. The
  // default runs run(inputs).
  virtual std::vector<Tensor> run_consuming(std::vector<Tensor>& inputs) { return run(inputs); }
  // A one-input, one-output use as a plain Module.
  Tensor forward(const Tensor& input) override;
};

}  // namespace refold::graph
