// ONNX BatchNormalization (inference) as a graph op, for scale/B/mean/var that arrive at run
// time; constant parameters become nn::BatchNorm2d instead (src/onnx/ops/norm_builders.cpp).
//   y = (x − mean) / √(var + epsilon) · scale + B     per channel (dim 1)
#pragma once

#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

class BatchNormalization : public graph::Op {
 public:
  explicit BatchNormalization(double epsilon);
  // inputs: X [N, C, …], scale, B, input_mean, input_var (each [C])
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  double epsilon() const { return epsilon_; }

 private:
  double epsilon_;
};

}  // namespace refold::ops
