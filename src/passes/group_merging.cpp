// group-merging: a Split of the channels, one Conv per piece, and a Concat of their outputs in
// the same order is one grouped Conv — MixNet's mixed-kernel depthwise convs and its grouped
// pointwise convs, and any block that writes a grouped conv out by hand.
//
// Pattern and rewrite (the Concat's output name survives):
//   x → Split(axis 1) → x_i → Conv_i(W_i, b_i) → y_i → Concat(axis 1, y_0, y_1, …) → y
//                                                   x → Conv(W, b, groups = Σ g_i) → y
// Why exact: Conv_i with g_i groups computes g_i independent convs, each over c input channels
// into o output channels; if every Conv_i has the same c and o, the same stride and dilation,
// the pieces' groups side by side are the groups of one conv over x, in order, and the Concat
// puts their outputs where that conv writes them. W = the W_i stacked along the output channels,
// each zero-padded (centered) to the largest kernel K, b = the b_i stacked (0 where absent). A
// kernel padded by (K − k)/2 per side reads the same inputs when the conv's padding grows by
// that much (dilation · (K − k)/2): every piece must then need one padding P
// (P = p_i + d·(K − k_i)/2, per side).
// Cost: the merged conv multiplies the padded zeros too. It is made only where its multiply-adds
// are at most kMaxGrowth times the pieces' (measured on MixNet-S, bench/RESULTS.md session 34).
//
// Preconditions (docs/reliability.md F24): Split and Concat along the channels, the Split's
// output i read by Conv_i alone (its size is then that conv's input channels), each conv's
// output read by the Concat alone, in order, nothing a graph output; plain Convs with constant
// weights (no fused post-ops). Otherwise the nodes stay as they are.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "passes/branch_nodes.h"
#include "passes/known_values.h"
#include "passes/node_module.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/nn/conv.h"
#include "refold/reference.h"
#include "refold/reparam/kernel_algebra.h"
#include "refold/reparam/module_kernels.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;

// How much more multiply-add work the merged conv may do than its pieces.
constexpr double kMaxGrowth = 2.0;

std::int64_t axis_of(const graph::Node& n) { return n.attributes.get_int("axis", 0); }

struct Piece {
  std::size_t conv;
  std::shared_ptr<nn::Conv2d> module;
  Pads2d pads;
};

// The merge at Concat `c`, or why not (empty: not a candidate at all).
std::optional<graph::Node> merge_at(graph::Graph& g, std::size_t c, std::vector<std::size_t>& erase,
                                    std::string& note) {
  const graph::Node& concat = g.nodes()[c];
  if (!is_op(concat, "Concat") || !concat.parts.empty() || concat.inputs.size() < 2 ||
      (axis_of(concat) != 1 && axis_of(concat) != -3))
    return std::nullopt;
  std::vector<Piece> pieces;
  std::optional<std::size_t> split;
  for (std::size_t i = 0; i < concat.inputs.size(); ++i) {
    const std::string& y = concat.inputs[i];
    const auto p = g.producer(y);
    if (!p || !detail::single_use_problem(g, y, c).empty()) return std::nullopt;
    const graph::Node& conv = g.nodes()[*p];
    if (!is_op(conv, "Conv") || !detail::conv_problem(g, conv).empty()) return std::nullopt;
    const auto module = detail::conv_module(conv);
    if (!module) return std::nullopt;
    const auto s = g.producer(conv.inputs[0]);
    if (!s || !is_op(g.nodes()[*s], "Split") || (split && *split != *s)) return std::nullopt;
    split = *s;
    // The conv reads the Split's output i, and that output has no other reader.
    const graph::Node& sn = g.nodes()[*s];
    if (sn.outputs.size() != concat.inputs.size() || sn.outputs[i] != conv.inputs[0] ||
        !detail::single_use_problem(g, conv.inputs[0], *p).empty())
      return std::nullopt;
    const nn::Conv2dOptions& o = module->options();
    pieces.push_back({*p, module, o.padding().resolve(o.kernel_size(), o.dilation())});
  }
  const graph::Node& sn = g.nodes()[*split];
  if (axis_of(sn) != 1 && axis_of(sn) != -3) return std::nullopt;
  // One geometry: per group c inputs and o outputs, one stride and dilation.
  const nn::Conv2dOptions& first = pieces[0].module->options();
  const std::int64_t c_per = first.in_channels() / first.groups();
  const std::int64_t o_per = first.out_channels() / first.groups();
  Size2d kernel{1, 1};
  double macs = 0;
  std::int64_t in_channels = 0, out_channels = 0, groups = 0;
  for (const Piece& p : pieces) {
    const nn::Conv2dOptions& o = p.module->options();
    if (o.in_channels() / o.groups() != c_per || o.out_channels() / o.groups() != o_per ||
        o.stride() != first.stride() || o.dilation() != first.dilation()) {
      note = fmt::format("kept {}: its convs differ in group shape, stride or dilation",
                         describe(concat));
      return std::nullopt;
    }
    kernel = {std::max(kernel.h, o.kernel_size().h), std::max(kernel.w, o.kernel_size().w)};
    macs += static_cast<double>(o.out_channels() * o.kernel_size().h * o.kernel_size().w);
    in_channels += o.in_channels();
    out_channels += o.out_channels();
    groups += o.groups();
  }
  const double merged_macs = static_cast<double>(out_channels * kernel.h * kernel.w);
  if (merged_macs > kMaxGrowth * macs) {
    note = fmt::format("kept {}: one conv of {}x{} kernels would do {:.2f}x the multiply-adds",
                       describe(concat), kernel.h, kernel.w, merged_macs / macs);
    return std::nullopt;
  }
  // The padding every piece needs once its kernel is centered in K.
  const Size2d d = first.dilation();
  std::optional<Pads2d> common;
  std::vector<Tensor> weights, biases;  // the pieces' kernels, padded, stacked below
  bool any_bias = false;
  for (const Piece& p : pieces) {
    const nn::Conv2dOptions& o = p.module->options();
    const Size2d k = o.kernel_size();
    if ((kernel.h - k.h) % 2 != 0 || (kernel.w - k.w) % 2 != 0) return std::nullopt;
    const std::int64_t dh = d.h * (kernel.h - k.h) / 2, dw = d.w * (kernel.w - k.w) / 2;
    const Pads2d need{p.pads.top + dh, p.pads.left + dw, p.pads.bottom + dh, p.pads.right + dw};
    if (common && !(need == *common)) {
      note = fmt::format("kept {}: its convs' paddings do not align", describe(concat));
      return std::nullopt;
    }
    common = need;
    const reparam::ConvKernel padded =
        reparam::pad_kernel_to(reparam::kernel_of(*p.module), kernel);
    weights.push_back(padded.weight.contiguous());
    biases.push_back(padded.bias.defined() ? padded.bias : zeros({padded.weight.size(0)}));
    any_bias = any_bias || padded.bias.defined();
  }
  // W and b: the pieces' stacked along the output channels.
  const reparam::ConvKernel merged{reference::cat(weights, 0),
                                   any_bias ? reference::cat(biases, 0) : Tensor(), groups};
  const auto geometry =
      nn::Conv2dOptions(in_channels, out_channels, kernel)
          .stride(first.stride())
          .padding(Padding2d::asymmetric(common->top, common->left, common->bottom, common->right))
          .dilation(d)
          .groups(groups);
  graph::Node node;
  node.name = concat.name;
  node.outputs = {concat.outputs[0]};
  node.origin = fmt::format("{} + {} convs + {}", sn.name, pieces.size(), concat.name);
  detail::set_conv(g, node, sn.inputs[0], g.unique_name(concat.name + "_grouped"), merged, geometry,
                   pieces[0].module->weight().suggest_memory_format());
  erase = {*split, c};
  for (const Piece& p : pieces) erase.push_back(p.conv);
  note = fmt::format("merged {}, {} convs and {} into one conv of {} groups, {}x{}", describe(sn),
                     pieces.size(), describe(concat), groups, kernel.h, kernel.w);
  return node;
}

}  // namespace

PassReport merge_grouped_convs(graph::Graph& graph) {
  PassReport report{"group-merging", false, {}};
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    std::vector<std::size_t> erase;
    std::string note;
    std::optional<graph::Node> merged;
    try {
      merged = merge_at(graph, i, erase, note);
    } catch (const Error& e) {
      note = fmt::format("kept {}: {}", describe(graph.nodes()[i]), e.message());
    }
    if (!note.empty()) report.notes.push_back(note);
    if (!merged) continue;
    // The conv reads what the Split read, so it may stand where the Concat was.
    i = detail::replace_nodes(graph, erase, i, std::move(*merged));
    report.changed = true;
  }
  graph.verify();
  return report;
}

}  // namespace refold::passes
