// ONNX Gemm, MatMul and Einsum as graph ops. A Gemm with a constant B, transB = 1, transA = 0,
// alpha = beta = 1 and a 1-d C is nn::Linear instead (src/onnx/ops/gemm_builders.cpp).
//   Gemm    Y = alpha · A' · B' + beta · C   (A' = Aᵀ when transA, B' = Bᵀ when transB)
//   MatMul  numpy.matmul
//   Einsum  numpy.einsum (reference::parse_einsum has the equation's rules)
#pragma once

#include <utility>
#include <vector>

#include "kernels/reference/onnx_ops.h"
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

// alpha · numpy.matmul(a, b), its dims read in `perm` order: alpha = 1 and no perm for the ONNX
// op; canonicalize's ScaledMatMul node (a MatMul with its scalar Mul/Div operands or result and
// a Transpose of its result folded in, passes/scaled_matmul.h) sets them.
class MatMul : public graph::Op {
 public:
  explicit MatMul(float alpha = 1.0f, Shape perm = {})
      : Op("MatMul"), alpha_(alpha), perm_(std::move(perm)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  // matmul() reads row- or column-major matrices through their strides and copies others once.
  bool reads_views() const override { return true; }
  float alpha() const { return alpha_; }
  const Shape& perm() const { return perm_; }

 private:
  float alpha_;
  Shape perm_;  // empty: the product's own order
};

// alpha · numpy.matmul(a, b), fastest first (an operand oneDNN does not read copied once):
// [..., K] · [K, N] as functional::linear; batched operands (batch dims broadcast) as oneDNN's
// matmul (kernels/onednn/matmul.h, alpha as its output scale), else one functional::linear per
// batch; else reference::matmul. Where alpha is not applied inside the product, the result is
// scaled after it.
Tensor matmul(const Tensor& a, const Tensor& b, float alpha = 1.0f);
// matmul(a, b, alpha).permute(perm), contiguous. Where the permuted order keeps N or M innermost,
// oneDNN writes the product straight into it (M innermost: the product computed as bᵀ · aᵀ, each
// matrix written row-major, which is y's column-major), so the permutation costs no pass of its
// own; otherwise the product is permuted after it.
Tensor matmul(const Tensor& a, const Tensor& b, float alpha, const Shape& perm);

// Einsum: a contraction of two inputs that is a batched matrix product (no label repeated in a
// term, every summed label in both inputs, batch labels of equal sizes: "bhid,bhjd->bhij",
// "bij,bjk->bik", "ij,jk->ik") runs as matmul() on permuted views; a one-input permutation
// ("nchw->nhwc") as a transpose; anything else as reference::einsum.
class Einsum : public graph::Op {
 public:
  explicit Einsum(reference::EinsumEquation equation)
      : Op("Einsum"), equation_(std::move(equation)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;

 private:
  reference::EinsumEquation equation_;
};

}  // namespace refold::ops
