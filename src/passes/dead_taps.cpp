// dead-taps: a Conv whose kernel taps can only ever read padding, at the input size the graph
// declares, becomes the smaller conv of the taps that can read the input. DeepLab's ASPP head is
// the case in point: a 3×3 conv with dilation 24 or 36 and padding to match over a 16×16 map
// has 8 of its 9 taps in the padding for every output pixel — it is exactly a 1×1 conv.
//
// Along one axis (kernel k, dilation d, stride s, pads p0 before and p1 after, input size n,
// output size m = ⌊(n + p0 + p1 − d·(k − 1) − 1)/s⌋ + 1), output o reads input i = o·s − p0 + t·d
// through tap t. Tap t reads the input for some output iff
//   [t·d − p0, (m − 1)·s − p0 + t·d] ∩ [0, n − 1] ≠ ∅,
// an interval that moves right as t grows, so the taps that do form one range [t0, t1]. The
// others only ever multiply zeros; dropping them is exact:
//   k' = t1 − t0 + 1,  p0' = p0 − t0·d,  p1' = p1 − (k − 1 − t1)·d,  d' = d (1 when k' = 1),
// and m' = m, since n + p0' + p1' − d·(k' − 1) = n + p0 + p1 − d·(k − 1). The weight keeps
// W[:, :, t0h..t1h, t0w..t1w]. Kept (with a note) where a new pad would be negative (the
// output's first or last pixel would have to crop the input) or no tap reads the input at all.
// Convs whose input size is not static (followed from the declared graph inputs through every
// producer, passes/known_values.h) are left alone: the rewrite holds for one size only.
#include <fmt/format.h>

#include <optional>
#include <string>

#include "passes/branch_nodes.h"
#include "passes/known_values.h"
#include "passes/passes.h"

namespace refold::passes {
namespace {

// The taps of one axis that can read the input, and the pads that keep the output size.
struct AxisTaps {
  std::int64_t first = 0, last = -1;  // last < first: no tap reads the input
  std::int64_t pad_before = 0, pad_after = 0;
};

AxisTaps live_taps(std::int64_t n, std::int64_t k, std::int64_t s, std::int64_t d, std::int64_t p0,
                   std::int64_t p1) {
  const std::int64_t m = (n + p0 + p1 - d * (k - 1) - 1) / s + 1;
  AxisTaps a;
  a.first = k;
  for (std::int64_t t = 0; t < k; ++t) {
    const std::int64_t lo = t * d - p0, hi = (m - 1) * s - p0 + t * d;
    if (hi < 0 || lo > n - 1) continue;
    a.first = std::min(a.first, t);
    a.last = t;
  }
  a.pad_before = p0 - a.first * d;
  a.pad_after = p1 - (k - 1 - a.last) * d;
  return a;
}

}  // namespace

PassReport drop_dead_taps(graph::Graph& graph) {
  PassReport report{"dead-taps", false, {}};
  // The input sizes, from the declared graph inputs through every producer (stand-in runs);
  // rewriting a conv keeps every value's shape, so one instance serves the whole pass.
  detail::StaticShapes shapes(graph);
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    const graph::Node& node = graph.nodes()[i];
    const auto conv = detail::conv_module(node);
    if (!conv || !detail::conv_problem(graph, node).empty()) continue;
    const std::optional<Shape> shape = shapes.shape(node.inputs[0]);
    if (!shape || shape->size() != 4) continue;
    const nn::Conv2dOptions& o = conv->options();
    const Size2d k = o.kernel_size(), s = o.stride(), d = o.dilation();
    const Pads2d p = o.padding().resolve(k, d);
    const std::int64_t h = (*shape)[2], w = (*shape)[3];
    if (h + p.top + p.bottom < d.h * (k.h - 1) + 1 || w + p.left + p.right < d.w * (k.w - 1) + 1)
      continue;  // an invalid conv: its own run says why
    const AxisTaps th = live_taps(h, k.h, s.h, d.h, p.top, p.bottom);
    const AxisTaps tw = live_taps(w, k.w, s.w, d.w, p.left, p.right);
    const std::int64_t kh = th.last - th.first + 1, kw = tw.last - tw.first + 1;
    if (kh == k.h && kw == k.w) continue;
    const std::string where = fmt::format("{} over a {}×{} input", detail::describe(node), h, w);
    if (kh <= 0 || kw <= 0) {
      report.notes.push_back(fmt::format("kept {}: no tap reads the input", where));
      continue;
    }
    if (th.pad_before < 0 || th.pad_after < 0 || tw.pad_before < 0 || tw.pad_after < 0) {
      report.notes.push_back(
          fmt::format("kept {}: its {}×{} live taps would need negative padding", where, kh, kw));
      continue;
    }
    // W[:, :, t0h..t1h, t0w..t1w], a view (not dense), copied by set_conv.
    const Tensor& weight = conv->weight();
    reparam::ConvKernel kernel{
        weight.as_strided(
            {weight.size(0), weight.size(1), kh, kw}, weight.strides(),
            weight.storage_offset() + th.first * weight.stride(2) + tw.first * weight.stride(3)),
        conv->bias(), o.groups()};
    const Size2d dilation{kh == 1 ? 1 : d.h, kw == 1 ? 1 : d.w};
    auto geometry = nn::Conv2dOptions(o.in_channels(), o.out_channels(), {kh, kw})
                        .stride(s)
                        .padding(Padding2d::asymmetric(th.pad_before, tw.pad_before, th.pad_after,
                                                       tw.pad_after))
                        .dilation(dilation)
                        .groups(o.groups());
    graph::Node rewritten = node;
    detail::set_conv(graph, rewritten, node.inputs[0], node.name, kernel, geometry,
                     weight.suggest_memory_format());
    rewritten.source = -1;
    rewritten.origin = "dead taps dropped from " + detail::describe(node);
    report.notes.push_back(fmt::format("{}: {}×{} taps → {}×{} (the others only read padding)",
                                       where, k.h, k.w, kh, kw));
    detail::replace_nodes(graph, {i}, i, std::move(rewritten));
    report.changed = true;
  }
  return report;
}

}  // namespace refold::passes
