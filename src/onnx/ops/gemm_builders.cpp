// Gemm (nn::Linear when it is one), MatMul and Pad.
#include <fmt/ranges.h>

#include "core/check.h"
#include "onnx/ops/cnn_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/gemm.h"
#include "refold/graph/ops/pad.h"
#include "refold/nn/linear.h"

namespace refold::onnx::ops {

nn::ModulePtr build_gemm(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 1);
  const graph::Attributes& a = node.attributes;
  graph::ops::GemmAttributes g;
  g.alpha = a.get_float("alpha", 1.0f);
  g.beta = a.get_float("beta", 1.0f);
  for (const char* name : {"transA", "transB"}) {
    const std::int64_t v = a.get_int(name, 0);
    REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", name, v);
  }
  g.trans_a = a.get_int("transA", 0) == 1;
  g.trans_b = a.get_int("transB", 0) == 1;
  const bool has_c = !input_name(node, 2).empty();

  if (!is_constant_input(context.graph, node, 1)) return std::make_shared<graph::ops::Gemm>(g);
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
  if (!linear) return std::make_shared<graph::ops::Gemm>(g);
  auto fc = make_module_keeping_rng<nn::Linear>(nn::LinearOptions(k, n).bias(has_c));
  share(fc->weight(), b);
  if (has_c) share(fc->bias(), context.graph.constant(node.inputs[2]));
  return fc;
}

nn::ModulePtr build_mat_mul(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<graph::ops::MatMul>();
}

nn::ModulePtr build_pad(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 4, 1);
  const std::string mode = node.attributes.get_string("mode", "constant");
  REFOLD_CHECK(mode == "constant",
               "unsupported: Pad mode '{}' (refold implements mode 'constant' only)", mode);
  if (is_constant_input(context.graph, node, 1)) {
    const Tensor& pads = context.graph.constant(node.inputs[1]);
    REFOLD_CHECK(pads.dtype() == DType::Int64 && pads.dim() == 1 && pads.numel() % 2 == 0,
                 "pads must be a 1-d int64 tensor of even length, got {}", pads.description());
  }
  return std::make_shared<graph::ops::Pad>();
}

}  // namespace refold::onnx::ops
