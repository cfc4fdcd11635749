// ONNX Clip (opset 11+: min and max are optional inputs) and HardSigmoid with ONNX's alpha/beta,
// as graph ops. The builders use nn::ReLU / nn::ReLU6 / nn::Hardsigmoid when the constants
// match those exactly (src/onnx/ops/activation_builders.cpp).
#pragma once

#include <optional>
#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

// inputs: X, optional min, optional max (0-d or 1-element tensors, X's dtype).
class Clip : public graph::Op {
 public:
  Clip() : Op("Clip") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
};

// max(0, min(1, alpha·x + beta)); ONNX's defaults are alpha 0.2, beta 0.5.
class HardSigmoid : public graph::Op {
 public:
  HardSigmoid(double alpha, double beta) : Op("HardSigmoid"), alpha_(alpha), beta_(beta) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  double alpha() const { return alpha_; }
  double beta() const { return beta_; }

 private:
  double alpha_;
  double beta_;
};

// The value of a 1-element bound (Clip's min/max), or nullopt when undefined.
std::optional<double> scalar_bound(const Tensor& t, const char* op, const char* name);

}  // namespace refold::ops
