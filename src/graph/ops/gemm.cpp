#include "refold/graph/ops/gemm.h"

#include "core/check.h"
#include "refold/functional.h"
#include "refold/reference_extra.h"

namespace refold::graph::ops {

std::vector<Tensor> Gemm::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK((in.size() == 2 || in.size() == 3) && in[0].defined() && in[1].defined(),
               "Gemm: expects A, B and optional C; got {} inputs", in.size());
  const Tensor c = in.size() > 2 ? in[2] : Tensor();
  const auto& a = attributes_;
  return {reference::gemm(in[0], in[1], c, a.alpha, a.beta, a.trans_a, a.trans_b)};
}

std::vector<Tensor> MatMul::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 2 && in[0].defined() && in[1].defined(),
               "MatMul: expects 2 inputs, got {}", in.size());
  const Tensor& a = in[0];
  const Tensor& b = in[1];
  // [..., K] · [K, N] is linear(a, bᵀ) (the weight read through a transposed view).
  if (a.dim() >= 2 && b.dim() == 2 && a.dtype() == b.dtype() && is_floating(a.dtype()) &&
      a.size(-1) == b.size(0))
    return {functional::linear(a, b.permute({1, 0}))};
  return {reference::matmul(a, b)};
}

}  // namespace refold::graph::ops
