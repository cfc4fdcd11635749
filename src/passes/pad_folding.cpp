// pad-folding: a Pad by zeros in front of a Conv becomes the Conv's own padding, as ONNX
// Runtime's PadFusion does. timm's HGNetV2 stem pads its first conv's output by (0, 1, 0, 1)
// before a 2×2 conv; PyTorch modules that call F.pad before a conv (TF "SAME" ports,
// EfficientNet's Conv2dSame) do the same.
//
// A conv with pads (t, l, b, r) reads its input through a zero border of those widths, so for a
// Pad of H and W by (t', l', b', r') with the value 0 (constant mode, detail::constant_pad_of),
//   conv(pad(x, t', l', b', r'), pads t, l, b, r) = conv(x, pads t + t', l + l', b + b', r + r')
// element for element: the padded input is the same tensor either way (the Pad's zeros and the
// conv's are both +0 multiplied by the weights; a Pad writing −0 counts as 0 too, as in ONNX
// Runtime). Each Conv reading the Pad's output as its data input is rewritten to read the Pad's
// input; the Pad stays while anything else reads it (dead-code, next, drops it when nothing
// does).
// Left alone, with a note: a Pad by a value other than 0, a Pad of N or C or by negative
// amounts (constant_pad_of says why), a Conv that is not a plain nn::Conv2d over constant
// weights (detail::conv_problem).
#include <fmt/format.h>

#include <string>
#include <variant>

#include "passes/branch_nodes.h"
#include "passes/node_module.h"
#include "passes/passes.h"

namespace refold::passes {

PassReport fold_pads(graph::Graph& graph) {
  PassReport report{"pad-folding", false, {}};
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    if (!detail::is_op(graph.nodes()[i], "Pad")) continue;
    const graph::Node pad = graph.nodes()[i];
    if (pad.inputs.empty() || pad.outputs.size() != 1) continue;
    const auto constant = detail::constant_pad_of(graph, pad);
    if (const auto* why = std::get_if<std::string>(&constant)) {
      report.notes.push_back(fmt::format("kept {}: {}", detail::describe(pad), *why));
      continue;
    }
    const auto& [extra, value] = std::get<detail::ConstantPad>(constant);
    if (value != 0.0) {
      report.notes.push_back(
          fmt::format("kept {}: it pads with {}, not 0", detail::describe(pad), value));
      continue;
    }
    for (std::size_t c : graph.consumers(pad.outputs[0])) {
      const graph::Node& node = graph.nodes()[c];
      const auto conv = detail::conv_module(node);
      if (!conv || node.inputs[0] != pad.outputs[0]) continue;
      if (std::string why = detail::conv_problem(graph, node); !why.empty()) {
        report.notes.push_back(
            fmt::format("kept {} in front of it: {}", detail::describe(pad), why));
        continue;
      }
      const nn::Conv2dOptions& o = conv->options();
      const Pads2d own = o.padding().resolve(o.kernel_size(), o.dilation());
      const Pads2d sum{own.top + extra.top, own.left + extra.left, own.bottom + extra.bottom,
                       own.right + extra.right};
      auto geometry = nn::Conv2dOptions(o.in_channels(), o.out_channels(), o.kernel_size())
                          .stride(o.stride())
                          .padding(Padding2d::asymmetric(sum.top, sum.left, sum.bottom, sum.right))
                          .dilation(o.dilation())
                          .groups(o.groups());
      graph::Node rewritten = node;  // the same weights, more padding
      rewritten.attributes = detail::conv_attributes(o.kernel_size(), geometry);
      rewritten.inputs[0] = pad.inputs[0];
      rewritten.source = -1;
      rewritten.module = module_for(graph, rewritten);
      rewritten.origin =
          fmt::format("{} with {} folded in", detail::describe(node), detail::describe(pad));
      report.notes.push_back(fmt::format("folded {} into {}: pads [{}, {}, {}, {}]",
                                         detail::describe(pad), detail::describe(node), sum.top,
                                         sum.left, sum.bottom, sum.right));
      detail::replace_nodes(graph, {c}, c, std::move(rewritten));
      report.changed = true;
    }
  }
  graph.verify();
  return report;
}

}  // namespace refold::passes
