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
  // Views that are dense in no memory format (a permute, a slice, a reshape of one), passed
  // between the ops that only move data, so that a chain such as Reshape → Transpose → Slice
  // copies once, not once per op. An op that reads_views() takes every input with any strides
  // at no more cost than a dense one (it returns a view of it or copies it once), and the
  // executor passes inputs to it as they are instead of making them contiguous first (its
  // accepts_channels_last() still tells the layout plan what the op costs at worst).
  // run_views() is run_consuming(), except that an output may be such a view; the executor
  // calls it when every reader of every output reads views and none is a graph output, so no
  // other op ever sees one. The default runs run_consuming(inputs).
  virtual bool reads_views() const { return false; }
  virtual std::vector<Tensor> run_views(std::vector<Tensor>& inputs) {
    return run_consuming(inputs);
  }
  // A one-input, one-output use as a plain Module.
  Tensor forward(const Tensor& input) override;
};

}  // namespace refold::graph
