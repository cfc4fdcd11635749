// bn-folding: Conv → BatchNormalization and ConvTranspose → BatchNormalization become one conv.
//
// Pattern:   x → Conv(W, b) → c → BatchNormalization(γ, β, μ, σ², ε) → y
// Rewrite:   x → Conv(W', b') → y          (the BN's output name survives)
//
// In inference BN is a per-channel affine map, so by linearity of the conv in its kernel
//   BN(conv(x))[o] = (W[o]∗x + b[o] − μ[o])·s[o] + β[o],   s[o] = γ[o]/√(σ²[o] + ε)
//                  = (W[o]·s[o])∗x + ((b[o] − μ[o])·s[o] + β[o])
// (reparam::fold_batch_norm). For ConvTranspose, weight [in, out/g, kh, kw], output channel
// o = G·(out/g) + j is written through W[G·(in/g) + i, j], so the scale s[o] is applied along
// dim 1 within each group (reparam::fold_batch_norm_into_conv_transpose).
//
// Preconditions (docs/reliability.md F18–F23, ONNX Runtime's ConvBNFusion): the conv's output feeds
// only the BN and is not a graph output; weights and BN parameters are constants; BN in
// inference mode with no optional output used; σ² ≥ 0 and σ² + ε ≠ 0 per channel; parameter
// shapes and dtypes agree. Otherwise the pair stays as it is and the note says why.
#include <fmt/format.h>

#include <string>

#include "passes/branch_nodes.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/reparam/module_kernels.h"

namespace refold::passes {
namespace {

using detail::describe;

// Why the pair (conv at `c`, BN at `b`) must not be folded, or "".
std::string fold_problem(const graph::Graph& graph, std::size_t c, std::size_t b) {
  const graph::Node& conv = graph.nodes()[c];
  const graph::Node& bn = graph.nodes()[b];
  if (std::string why = detail::conv_problem(graph, conv); !why.empty()) return why;
  if (std::string why = detail::batch_norm_problem(graph, bn); !why.empty()) return why;
  if (std::string why = detail::single_use_problem(graph, conv.outputs[0], b); !why.empty())
    return "the conv output " + why;
  return {};
}

// The folded module: W' = W·s, b' = (b − μ)·s + β with the conv's geometry; the weight keeps
// the original's memory format. Throws refold::Error (bad BN statistics, shapes, dtypes).
nn::ModulePtr folded_module(const graph::Node& conv, const graph::Node& bn, Tensor& weight,
                            Tensor& bias) {
  const reparam::BatchNormParams params = reparam::params_of(*detail::batch_norm_module(bn));
  if (auto c = detail::conv_module(conv)) {
    auto fused = reparam::make_conv2d(reparam::fold_batch_norm(reparam::kernel_of(*c), params),
                                      c->options(), c->weight().suggest_memory_format());
    weight = fused->weight();
    bias = fused->bias();
    return fused;
  }
  auto t = detail::conv_transpose_module(conv);
  auto fused = reparam::make_conv_transpose2d(
      reparam::fold_batch_norm_into_conv_transpose(reparam::kernel_of(*t), params), t->options(),
      t->weight().suggest_memory_format());
  weight = fused->weight();
  bias = fused->bias();
  return fused;
}

}  // namespace

PassReport fold_batch_norms(graph::Graph& graph) {
  PassReport report{"bn-folding", false, {}};
  for (std::size_t b = 0; b < graph.nodes().size(); ++b) {
    const graph::Node& bn = graph.nodes()[b];
    if (!detail::is_op(bn, "BatchNormalization") || bn.inputs.empty()) continue;
    const auto c = graph.producer(bn.inputs[0]);
    if (!c) continue;
    const graph::Node& conv = graph.nodes()[*c];
    if (!detail::is_op(conv, "Conv") && !detail::is_op(conv, "ConvTranspose")) continue;

    const std::string pair = fmt::format("{} into {}", describe(bn), describe(conv));
    if (std::string why = fold_problem(graph, *c, b); !why.empty()) {
      report.notes.push_back(fmt::format("kept {}: {}", pair, why));
      continue;
    }
    graph::Node fused;
    Tensor weight, bias;
    try {
      fused.module = folded_module(conv, bn, weight, bias);
    } catch (const Error& e) {
      report.notes.push_back(fmt::format("kept {}: {}", pair, e.message()));
      continue;
    }
    fused.name = conv.name;  // free once the conv is erased
    fused.op_type = conv.op_type;
    fused.attributes = conv.attributes;  // same geometry, so the same ONNX attributes
    fused.outputs = {bn.outputs[0]};
    fused.origin = fmt::format("{} + {}", conv.name, bn.name);
    fused.inputs = detail::add_parameter_constants(
        graph, conv.inputs[0], graph.unique_name(conv.name + "_bnfold"), weight, bias);
    report.notes.push_back("folded " + pair);
    // The fused node takes the BN's place (the conv's output had no other reader), so the
    // scan goes on right after it.
    b = detail::replace_nodes(graph, {*c, b}, b, std::move(fused));
    report.changed = true;
  }
  graph.verify();
  return report;
}

}  // namespace refold::passes
