// Gemm (nn::Linear when it is one), MatMul and Pad.
#include "ops/gemm.h"

#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/op.h"
#include "ops/pad.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/linear.h"

namespace refold::ops {

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

nn::ModulePtr build_gemm(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 1);
  const graph::Attributes& a = node.attributes;
  GemmAttributes g;
  g.alpha = a.get_float("alpha", 1.0f);
  g.beta = a.get_float("beta", 1.0f);
  for (const char* name : {"transA", "transB"}) {
    const std::int64_t v = a.get_int(name, 0);
    REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", name, v);
  }
  g.trans_a = a.get_int("transA", 0) == 1;
  g.trans_b = a.get_int("transB", 0) == 1;
  const bool has_c = !input_name(node, 2).empty();

  if (!is_constant_input(context.graph, node, 1)) return std::make_shared<Gemm>(g);
  const Tensor& b = context.graph.constant(node.inputs[1]);
  REFOLD_CHECK(b.dim() == 2, "B must be 2-d, got [{}]", fmt::join(b.sizes(), ", "));
  check_floating(b, "B");
  // B' = transB ? Bᵀ : B is [K, N]
  const std::int64_t k = g.trans_b ? b.size(1) : b.size(0);
  const std::int64_t n = g.trans_b ? b.size(0) : b.size(1);
  if (is_constant_input(context.graph, node, 0)) {  // F28, when A is known now
    const Tensor& at = context.graph.constant(node.inputs[0]);
    REFOLD_CHECK(at.dim() == 2, "A must be 2-d, got [{}]", fmt::join(at.sizes(), ", "));
    const std::int64_t ka = g.trans_a ? at.size(0) : at.size(1);
    REFOLD_CHECK(ka == k,
                 "inner dimensions differ: A' has K = {} but B' has K = {} (transA {}, transB {})",
                 ka, k, g.trans_a ? 1 : 0, g.trans_b ? 1 : 0);
  }
  // y = A · Bᵀ + C with B [N, K] and C [N] is nn::Linear(K, N) with weight B and bias C.
  const bool c_const = !has_c || is_constant_input(context.graph, node, 2);
  bool linear = !g.trans_a && g.trans_b && g.alpha == 1.0 && c_const && k > 0 && n > 0;
  if (linear && has_c) {
    const Tensor& c = context.graph.constant(node.inputs[2]);
    linear = g.beta == 1.0 && c.dim() == 1 && c.size(0) == n && c.dtype() == b.dtype();
  }
  if (!linear) return std::make_shared<Gemm>(g);
  auto fc = make_module_keeping_rng<nn::Linear>(nn::LinearOptions(k, n).bias(has_c));
  share(fc->weight(), b);
  if (has_c) share(fc->bias(), context.graph.constant(node.inputs[2]));
  return fc;
}

nn::ModulePtr build_mat_mul(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<MatMul>();
}

const std::vector<OpDef>& gemm_ops() {
  static const std::vector<OpDef> table = {
      {"Gemm", 7, build_gemm, LayoutRule::Fresh},  // v7: C broadcasts (v6 had `broadcast`)
      {"MatMul", 1, build_mat_mul, LayoutRule::Fresh},
  };
  return table;
}

}  // namespace refold::ops
