// ONNX Gemm and MatMul as graph ops. A Gemm with a constant B, transB = 1, transA = 0,
// alpha = beta = 1 and a 1-d C is nn::Linear instead (src/onnx/ops/gemm_builders.cpp).
//   Gemm    Y = alpha · A' · B' + beta · C   (A' = Aᵀ when transA, B' = Bᵀ when transB)
//   MatMul  numpy.matmul
#pragma once

#include <vector>

#include "refold/graph/op.h"

namespace refold::ops {

struct GemmAttributes {
  double alpha = 1.0;
  double beta = 1.0;
  bool trans_a = false;
  bool trans_b = false;
};

class Gemm : public graph::Op {
 public:
  explicit Gemm(const GemmAttributes& attributes) : Op("Gemm"), attributes_(attributes) {}
  // inputs: A, B, optional C
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const GemmAttributes& attributes() const { return attributes_; }

 private:
  GemmAttributes attributes_;
};

class MatMul : public graph::Op {
 public:
  MatMul() : Op("MatMul") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
};

}  // namespace refold::ops
