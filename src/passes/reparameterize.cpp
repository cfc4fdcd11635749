// reparameterize: every linear region of the graph over one input becomes one Conv — RepVGG,
// ACNet, DBB, MobileOne, QARepVGG, RepConv, RepGhost, FastViT's RepMixer, RepViT's RepVggDw
// and any block written another way, by one rule rather than a list of block shapes.
//
// A linear step is a node whose output is an affine map of one 4-d value (or a sum of them):
//   Conv (constant weights, any kernel, stride, dilation, groups, with or without bias),
//   BatchNormalization (inference), AveragePool (counting its padding), Pad with a constant,
//   a cropping Slice, Add/Sub/Mul/Div by a constant per channel or per tensor, Neg, Identity,
//   a write into the border of a Pad (ScatterND with constant indices and updates, or an
//   Add/Sub/Mul/Div by a constant of the value's size that leaves the inside alone), and
//   Add/Sub/Sum of linear values.
// A region is what a root's value depends on through linear steps, back to its boundary: the
// values that are not written by a linear step, are graph inputs or outputs, are read more
// than once (a fan-out: the input of a block, which stays), or were cut (below). Its inputs
// dominate the root — every path from the rest of the graph into the region passes through
// them — so the region's value is
//   root = Σ_inputs conv(x_i; W_i, geometry_i) + c          (reparam/conv_map.h)
// with c a per-channel constant: what the region writes where every x_i is zero. Walking the
// region in order composes each step into that form (conv ∘ conv, per-channel affine, sums),
// exactly or not at all:
//   - a padding (a Pad, a conv's or a pool's own padding) after the region's value so far is
//     exact only where that value is 1×1 and the border comes to hold its constant part c:
//     the merged conv pads x with zeros, which the region turns into c. A conv or pool pads
//     with zeros, so c must be 0 there; a Pad's border is followed through the pointwise steps
//     and border writes after it and checked, per channel and up to float32 rounding, at the
//     next step that is not pointwise (DBB's BNAndPad pads with c: torch.onnx writes it as a
//     zero Pad and a ScatterND per side, whose indices constant folding computes);
//   - a sum of maps over one input needs one stride and equal output sizes (conv_map.h);
//   - a sum of different inputs goes on only through pointwise steps (they may broadcast).
// When a step is not exact, the value it reads is cut — made a boundary — and the region
// starts again from there: the part after the cut merges on its own, and so may the part
// before it, as another region.
// A region is rewritten as one Conv per input (an input whose map is the identity is read
// as it is) and an Add between them, the constant c as the first conv's bias — only when that
// has fewer nodes and no more multiply-adds per output pixel than the region (a 3×3 then a
// channel-expanding 1×1 stays two convs). Each region that holds a sum of two branches or more
// and cannot merge whole is noted under -v with the reason ("branch mismatch: …").
//
// Preconditions (docs/reliability.md F24): constant parameters, plain modules (a conv with a
// fused activation is not linear), BN in inference mode; every value inside a region is read
// once, by the region, and is not a graph output, so erasing it loses nothing.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "passes/branch_nodes.h"
#include "passes/known_values.h"
#include "passes/node_module.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/reparam/module_kernels.h"
#include "reparam/conv_map.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;
using reparam::ConvMap;

// ---- what a node does, read from the graph ----------------------------------------------------

// The channel axis of the 4-d values of a region: a per-channel constant is a scalar, [1],
// [C, 1, 1] or [1, C, 1, 1] (detail::axis_values).
constexpr std::int64_t kChannelFromEnd = 3, kRank = 4;

// The operand of `node` at `i` as a per-channel constant, if it is one.
std::optional<std::vector<double>> constant_operand(const graph::Graph& g, const graph::Node& n,
                                                    std::size_t i) {
  const auto t = detail::constant_value(g, n.inputs[i]);
  if (!t) return std::nullopt;
  return detail::axis_values(*t, kChannelFromEnd, kRank);
}

enum class StepKind { Affine, Sum, Conv, AvgPool, Border, Fill };
enum class FillOp { Scatter, Add, Mul, Div };

// One node as a linear step: the region values it reads and what it does to them.
struct Step {
  StepKind kind = StepKind::Affine;
  std::vector<std::string> operands;  // the non-constant inputs it reads
  // Affine: y = x·scale + shift, each of 1 or C values. Sum: y = Σ sign_i·x_i + shift.
  std::vector<double> scale{1.0}, shift{0.0}, signs;
  // Conv and AvgPool: the map (channels of an AvgPool are filled in at evaluation) and bias.
  ConvMap map;
  std::vector<double> bias;
  Pads2d border;  // Border: a Pad (value `pad_value`) or a crop (negative pads)
  double pad_value = 0;
  // Fill: a write into the border of a Pad of the region — ScatterND(x, indices, updates), or
  // x + updates, x · updates, x / updates with a constant of x's size that is 0 (Add) or 1
  // (Mul, Div) inside the Pad's border.
  FillOp fill = FillOp::Scatter;
  Tensor indices, updates;
};

std::variant<Step, std::string> read_step(const graph::Graph& g, const graph::Node& n,
                                          bool values = true, int depth = 0);

// Whether `v` is a Pad's output, through pointwise steps (affine steps, border writes) that
// each read one value: where a write into the Pad's border may follow (BNAndPad).
bool written_after_a_pad(const graph::Graph& g, const std::string& v, int depth) {
  constexpr int kMaxDepth = 16;  // BNAndPad writes four sides; an affine step or two around them
  const auto p = g.producer(v);
  if (!p || depth > kMaxDepth) return false;
  const auto step = read_step(g, g.nodes()[*p], false, depth + 1);
  const Step* s = std::get_if<Step>(&step);
  if (!s || s->operands.size() != 1) return false;
  if (s->kind == StepKind::Border) {
    const Pads2d& q = s->border;
    return q.top > 0 || q.left > 0 || q.bottom > 0 || q.right > 0;
  }
  return (s->kind == StepKind::Affine || s->kind == StepKind::Fill) &&
         written_after_a_pad(g, s->operands[0], depth + 1);
}

// x + K, x − K, x · K, x / K (or K + x, K · x) with a constant K that does not broadcast per
// channel, after a Pad: a write into the Pad's border, if K leaves the inside alone (checked
// with the shapes, when the region is evaluated).
std::variant<Step, std::string> border_fill_step(const graph::Graph& g, const graph::Node& n,
                                                 int depth) {
  const auto k0 = detail::constant_value(g, n.inputs[0]);
  const auto k1 = detail::constant_value(g, n.inputs[1]);
  const std::string not_per_channel =
      fmt::format("{}: the constant does not broadcast per channel", describe(n));
  const bool add = is_op(n, "Add"), mul = is_op(n, "Mul");
  if (k0 && !add && !mul) return not_per_channel;  // K − x, K / x
  const Tensor& k = k0 ? *k0 : *k1;
  const std::string& x = n.inputs[k0 ? 1 : 0];
  if (k.dtype() != DType::Float32 || k.dim() > 4 || !written_after_a_pad(g, x, depth))
    return not_per_channel;
  Step s;
  s.kind = StepKind::Fill;
  s.operands = {x};
  s.fill = add || is_op(n, "Sub") ? FillOp::Add : mul ? FillOp::Mul : FillOp::Div;
  s.updates = k;
  if (is_op(n, "Sub")) {  // x − K = x + (−K)
    std::vector<float> v = k.to_vector();
    for (float& e : v) e = -e;
    s.updates = from_values(v, k.sizes());
  }
  return s;
}

// A per-channel affine step: Add/Sub/Mul/Div by a per-channel constant, Neg, BN in inference
// (detail::axis_affine, as bn-folding reads them).
std::variant<Step, std::string> affine_step(const graph::Graph& g, const graph::Node& n) {
  auto a = detail::axis_affine(g, n, kChannelFromEnd, kRank);
  if (auto* why = std::get_if<std::string>(&a)) return *why;
  detail::AxisAffine& affine = std::get<detail::AxisAffine>(a);
  Step s;
  s.operands = {affine.operand};
  s.scale = std::move(affine.affine.scale);
  s.shift = std::move(affine.affine.shift);
  return s;
}

// An elementwise Add/Sub/Mul/Div with one constant operand, or Add/Sub/Sum of values.
std::variant<Step, std::string> arithmetic_step(const graph::Graph& g, const graph::Node& n,
                                                int depth) {
  Step s;
  if (is_op(n, "Sum")) {
    s.kind = StepKind::Sum;
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      if (const auto c = constant_operand(g, n, i)) {
        if (s.shift.size() == 1 && c->size() != 1) s.shift.assign(c->size(), s.shift[0]);
        if (c->size() != 1 && c->size() != s.shift.size())
          return fmt::format("{}: constants of different channel counts", describe(n));
        for (std::size_t k = 0; k < s.shift.size(); ++k) s.shift[k] += (*c)[c->size() == 1 ? 0 : k];
        continue;
      }
      s.operands.push_back(n.inputs[i]);
      s.signs.push_back(1.0);
    }
    if (s.operands.empty()) return fmt::format("{} sums constants only", describe(n));
    return s;
  }
  if (n.inputs.size() != 2) return fmt::format("{} does not have two inputs", describe(n));
  const auto c0 = constant_operand(g, n, 0), c1 = constant_operand(g, n, 1);
  const bool add = is_op(n, "Add"), sub = is_op(n, "Sub");
  if (!c0 && !c1) {
    if (detail::constant_value(g, n.inputs[0]) || detail::constant_value(g, n.inputs[1]))
      return border_fill_step(g, n, depth);
    if (!add && !sub) return fmt::format("{} multiplies two values", describe(n));
    s.kind = StepKind::Sum;
    s.operands = n.inputs;
    s.signs = {1.0, sub ? -1.0 : 1.0};
    return s;
  }
  return affine_step(g, n);
}

// The node as a linear step, or why it is not one. Without `values` a Conv's map and bias are
// left empty (what a step is costs nothing to ask; what it computes is read for a region).
// `depth`: how many steps the question has followed back from the node first asked.
std::variant<Step, std::string> read_step(const graph::Graph& g, const graph::Node& n, bool values,
                                          int depth) {
  if (n.outputs.size() != 1 && !is_op(n, "BatchNormalization") && !is_op(n, "Dropout"))
    return fmt::format("{} has {} outputs", describe(n), n.outputs.size());
  if (n.inputs.empty() || n.inputs[0].empty()) return fmt::format("{} has no input", describe(n));
  Step s;
  s.operands = {n.inputs[0]};
  if (is_op(n, "Add") || is_op(n, "Sub") || is_op(n, "Mul") || is_op(n, "Div") || is_op(n, "Sum")) {
    if (!n.parts.empty()) return fmt::format("{} is a fused node", describe(n));
    return arithmetic_step(g, n, depth);
  }
  if (is_op(n, "Neg") || is_op(n, "BatchNormalization")) return affine_step(g, n);
  if (is_op(n, "Identity") || is_op(n, "Dropout")) {
    if (n.inputs.size() > 1 || n.outputs.size() > 1)
      return fmt::format("{} has a mask or training input", describe(n));
    return s;
  }
  if (is_op(n, "Conv")) {
    if (std::string why = detail::conv_problem(g, n); !why.empty()) return why;
    s.kind = StepKind::Conv;
    if (!values) return s;
    const auto conv = detail::conv_module(n);
    const nn::Conv2dOptions& o = conv->options();
    const reparam::ConvKernel k = reparam::kernel_of(*conv);
    s.map = reparam::conv_map(k, o.stride(), o.padding().resolve(k.kernel_size(), o.dilation()),
                              o.dilation());
    if (k.bias.defined()) {
      const std::vector<float> b = k.bias.to_vector();
      s.bias.assign(b.begin(), b.end());
    }
    return s;
  }
  if (is_op(n, "AveragePool")) {
    const auto pool = detail::avg_pool_module(n);
    if (!pool) return fmt::format("{} is not run by a plain AvgPool2d module", describe(n));
    const nn::AvgPool2dOptions& o = pool->options();
    const Pads2d p = {o.padding().h, o.padding().w, o.padding().h, o.padding().w};
    if (o.ceil_mode() || o.divisor_override() || (!o.count_include_pad() && p != Pads2d{}))
      return fmt::format(
          "{}: only an AveragePool without ceil_mode or divisor, counting its "
          "padding, is a conv",
          describe(n));
    s.kind = StepKind::AvgPool;
    s.map.kernel = o.kernel_size();
    s.map.stride = o.stride();
    s.map.pads = p;
    return s;
  }
  if (is_op(n, "ScatterND")) {
    // BNAndPad as torch.onnx writes `out[:, :, 0:p, :] = v` and the other three sides.
    const auto indices = detail::constant_value(g, n.inputs.size() == 3 ? n.inputs[1] : "");
    const auto updates = detail::constant_value(g, n.inputs.size() == 3 ? n.inputs[2] : "");
    if (n.inputs.size() == 3 && (!indices || !updates))
      return fmt::format(
          "{} does not write constants: its {} '{}' are computed when it runs (constant folding "
          "computes an exporter's index arithmetic from a static input shape)",
          describe(n), indices ? "updates" : "indices", n.inputs[indices ? 2 : 1]);
    if (!indices || !updates || updates->dtype() != DType::Float32 ||
        n.attributes.get_string("reduction", "none") != "none")
      return fmt::format("{} does not write float32 constants", describe(n));
    if (!written_after_a_pad(g, n.inputs[0], depth))
      return fmt::format("{} does not write into the border of a Pad", describe(n));
    s.kind = StepKind::Fill;
    s.indices = *indices;
    s.updates = *updates;
    return s;
  }
  if (is_op(n, "Pad") || is_op(n, "Slice")) {
    s.kind = StepKind::Border;
    if (is_op(n, "Slice")) {
      auto crop = detail::crop_of(g, n);
      if (auto* why = std::get_if<std::string>(&crop)) return *why;
      s.border = std::get<Pads2d>(crop);
      return s;
    }
    auto pad = detail::constant_pad_of(g, n);
    if (auto* why = std::get_if<std::string>(&pad)) return *why;
    s.border = std::get<detail::ConstantPad>(pad).pads;
    s.pad_value = std::get<detail::ConstantPad>(pad).value;
    return s;
  }
  return fmt::format("{} is not linear", describe(n));
}

// ---- the value of a region: Σ conv(x_i) + c -------------------------------------------------

struct Term {
  std::string input;
  ConvMap map;
};

// The border a Pad of the region wrote, while only pointwise steps follow it. The merged conv
// pads x with zeros, which the region maps to its constant part c, so by the next step that is
// not pointwise (or the region's end) the border must hold c, channel by channel: by the Pad's
// value, or by what is written into it after a zero Pad — DBB's BNAndPad as exported, which
// overwrites each side with ScatterND, or an Add of a constant that is zero inside.
struct Border {
  std::string pad;     // describe() of the Pad, for the note
  std::string before;  // the value the Pad reads: the cut when the border does not come to hold c
  Pads2d pads;
  double pad_value = 0;
  bool written = false;       // a Fill or an affine step changed it since the Pad
  std::vector<double> value;  // per channel, while each channel's border holds one value
  // Once written into: the padded value's static shape [N, C, H, W] and all of its elements,
  // of which those in the border count.
  Shape shape;
  std::vector<double> plane;

  bool in_border(std::int64_t h, std::int64_t w) const {
    return h < pads.top || h >= shape[2] - pads.bottom || w < pads.left ||
           w >= shape[3] - pads.right;
  }
};

struct Expr {
  std::vector<Term> terms;  // one per input
  std::vector<double> constant;
  std::int64_t channels = 0;
  int branches = 1;  // paths from the inputs summed into it
  std::optional<Border> border;
};

// A step that cannot be made exact, and the value to cut in front of it.
struct Failure {
  std::string why;
  std::vector<std::string> cut;
  bool quiet = false;  // a cut the cost rule makes, not a mismatch: no note
};

// Thrown by a step whose composition costs more than its parts and whose map would be larger
// than kLargestCostlyMap: the region is cut at `value` before the map is built.
struct CostlyComposition {
  std::string value;
};

// Weight elements (doubles) of the largest composition that costs more than its parts and is
// still built, for the cost rule to judge with the whole region. Beyond it the cut is made at
// once: FastViT's depthwise 7×7 into a 1×1 384→1152 would be 21.7 M elements (173 MB) that the
// cost rule then rejects (7 times what the two convs cost apart).
constexpr double kLargestCostlyMap = 1 << 20;

// What the cost rule still reads of a value once no later step of the region reads it: its
// channels, and each term's input and geometry (stride). The maps' weights (float64, several
// times the conv weights they came from), the constant part and the border go, so a region holds
// only the values still to be read.
Expr outline_of(const Expr& e) {
  Expr o;
  o.channels = e.channels;
  o.branches = e.branches;
  for (const Term& t : e.terms) {
    ConvMap m;
    m.out_channels = t.map.out_channels;
    m.in_channels = t.map.in_channels;
    m.groups = t.map.groups;
    m.kernel = t.map.kernel;
    m.stride = t.map.stride;
    m.dilation = t.map.dilation;
    m.pads = t.map.pads;
    o.terms.push_back({t.input, std::move(m)});
  }
  return o;
}

bool all_zero(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return x == 0.0; });
}

// `v` (1 or `channels` values) as `channels` values; throws when it has another length.
std::vector<double> per_channel(const std::vector<double>& v, std::int64_t channels,
                                const graph::Node& n) {
  if (v.size() == 1) return std::vector<double>(static_cast<std::size_t>(channels), v[0]);
  if (static_cast<std::int64_t>(v.size()) != channels)
    fail("{} applies {} per-channel values to {} channels", describe(n), v.size(), channels);
  return v;
}

bool is_plain_identity(const ConvMap& m) {
  return m.pointwise() && m.pads == Pads2d{} && m.groups == m.in_channels &&
         m.in_channels == m.out_channels &&
         std::all_of(m.weight.begin(), m.weight.end(), [](double w) { return w == 1.0; });
}

class RegionMerger {
 public:
  RegionMerger(graph::Graph& graph, PassReport& report) : g_(graph), report_(report) {}

  // One scan over the graph, rewriting every region it can; true when it changed the graph or
  // cut a value (so another scan may find more).
  bool scan() {
    bool progress = false;
    shapes_.reset();  // a value made by a rewrite may reuse the name of one erased
    for (std::size_t i = 0; i < g_.nodes().size(); ++i) {
      if (!is_root(i)) continue;
      const std::size_t cuts_before = cuts_.size();
      if (const auto at = merge(i)) {
        i = *at;
        progress = true;
      }
      if (cuts_.size() != cuts_before) progress = true;
    }
    return progress;
  }

 private:
  // Whether node i is a linear step; remembered by name until the graph changes.
  bool linear(std::size_t i) const {
    const graph::Node& n = g_.nodes()[i];
    const auto it = linear_.find(n.name);
    if (it != linear_.end()) return it->second;
    const bool is = std::holds_alternative<Step>(read_step(g_, n, /*values=*/false));
    linear_.emplace(n.name, is);
    return is;
  }

  // Reads of `v` by all nodes (a node reading it twice counts twice).
  std::size_t reads(const std::string& v) const {
    std::size_t n = 0;
    for (std::size_t c : g_.consumers(v)) {
      const auto& ins = g_.nodes()[c].inputs;
      n += static_cast<std::size_t>(std::count(ins.begin(), ins.end(), v));
    }
    return n;
  }

  // A value the region stops at.
  bool boundary(const std::string& v) const {
    const auto p = g_.producer(v);
    return !p || cuts_.count(v) != 0 || g_.is_graph_output(v) || reads(v) != 1 || !linear(*p);
  }

  // A linear node whose output is a boundary: the end of a region.
  bool is_root(std::size_t i) const {
    const graph::Node& n = g_.nodes()[i];
    if (n.outputs.empty() || !linear(i)) return false;
    const std::string& out = n.outputs[0];
    if (cuts_.count(out) != 0 || g_.is_graph_output(out) || reads(out) != 1) return true;
    return !linear(g_.consumers(out).at(0));
  }

  struct Region {
    std::vector<std::size_t> nodes;   // in graph order; the root last
    std::vector<std::string> inputs;  // in the order first met
    std::map<std::size_t, Step> steps;
  };

  // `values`: with each conv's map (read_step); without, what the region is costs nothing.
  Region collect(std::size_t root, bool values = true) const {
    Region r;
    std::vector<std::size_t> stack{root};
    std::set<std::size_t> seen{root};
    while (!stack.empty()) {
      const std::size_t i = stack.back();
      stack.pop_back();
      Step s = std::get<Step>(read_step(g_, g_.nodes()[i], values));
      for (const std::string& v : s.operands) {
        if (boundary(v)) {
          if (std::find(r.inputs.begin(), r.inputs.end(), v) == r.inputs.end())
            r.inputs.push_back(v);
        } else if (const std::size_t p = *g_.producer(v); seen.insert(p).second) {
          stack.push_back(p);
        }
      }
      r.steps.emplace(i, std::move(s));
    }
    r.nodes.assign(seen.begin(), seen.end());
    return r;
  }

  // The channel count of every region value, from the steps that fix it (a conv's weight, a
  // BN's or a constant's length) through those that keep it; empty where unknown.
  std::map<std::string, std::int64_t> channels_of(const Region& r) const {
    std::map<std::string, std::int64_t> ch;
    for (bool changed = true; changed;) {
      changed = false;
      const auto set = [&](const std::string& v, std::int64_t c) {
        if (c > 0 && ch.emplace(v, c).second) changed = true;
      };
      for (std::size_t i : r.nodes) {
        const Step& s = r.steps.at(i);
        const std::string& out = g_.nodes()[i].outputs[0];
        if (s.kind == StepKind::Conv) {
          set(s.operands[0], s.map.in_channels);
          set(out, s.map.out_channels);
          continue;
        }
        // Every other step keeps the channel count: its operands and output agree.
        for (const auto* vec : {&s.scale, &s.shift})
          if (vec->size() > 1) set(out, static_cast<std::int64_t>(vec->size()));
        std::int64_t known = ch.count(out) ? ch[out] : 0;
        for (const std::string& v : s.operands)
          if (ch.count(v)) known = ch[v];
        if (known == 0) continue;
        set(out, known);
        for (const std::string& v : s.operands) set(v, known);
      }
    }
    return ch;
  }

  // The fewest nodes a rewrite of `r` can have: rewrite() writes one conv per input whose term
  // is not the plain identity and one Add per further input, and an input's term is the plain
  // identity only if every path from it to the root passes sums with sign +1 and affine steps
  // of scale 1 alone, and only one path does. Reads no conv's values.
  std::size_t fewest_rewritten_nodes(const Region& r) const {
    std::map<std::string, std::map<std::string, bool>> reach;  // value → input → transformed
    for (const std::string& x : r.inputs) reach[x][x] = false;
    for (std::size_t i : r.nodes) {
      const Step& s = r.steps.at(i);
      std::map<std::string, bool> out;
      for (std::size_t k = 0; k < s.operands.size(); ++k) {
        const bool keeps =
            s.kind == StepKind::Sum
                ? s.signs.at(k) == 1.0
                : s.kind == StepKind::Affine && std::all_of(s.scale.begin(), s.scale.end(),
                                                            [](double v) { return v == 1.0; });
        for (const auto& [x, transformed] : reach[s.operands[k]]) {
          const auto [it, first] = out.emplace(x, transformed || !keeps);
          if (!first) it->second = true;  // two paths: a sum of maps, never the plain identity
        }
      }
      reach[g_.nodes()[i].outputs[0]] = std::move(out);
    }
    const std::map<std::string, bool>& root = reach[g_.nodes()[r.nodes.back()].outputs[0]];
    const std::size_t convs = static_cast<std::size_t>(
        std::count_if(root.begin(), root.end(), [](const auto& e) { return e.second; }));
    return std::max<std::size_t>(convs, 1) + root.size() - 1;
  }

  // x is 4-d: its shape is known so (declared, or written by a Conv with a 4-d weight, a 2-d
  // pool, or an op that keeps such a shape), or a Conv, AveragePool, Pad or Slice of the region
  // reads it (each needs 4-d).
  bool proven_4d(const Region& r, const std::string& x) const {
    if (const auto shape = detail::known_shape(g_, x); shape && shape->size() == 4) return true;
    for (std::size_t i : r.nodes) {
      const Step& s = r.steps.at(i);
      if (s.kind != StepKind::Affine && s.kind != StepKind::Sum &&
          std::find(s.operands.begin(), s.operands.end(), x) != s.operands.end())
        return true;
    }
    return false;
  }

  // The region's value at each step, in graph order; a Failure at the first step that is not
  // exact.
  using Values = std::map<std::string, Expr>;  // every value of the region, the inputs' too
  struct Evaluated {
    Values values;
    // The values a conv or pool reads whose composition with it costs more multiply-adds than
    // the two apart (a depthwise window into a dense conv): where to cut when the whole region
    // would cost more than it does now.
    std::set<std::string> costly;
  };
  // The steps' conv maps move into the values as they are read (afterwards the region's steps
  // keep only their geometry), and a value no later step reads keeps only what cost() reads.
  std::variant<Evaluated, Failure> evaluate(Region& r,
                                            const std::map<std::string, std::int64_t>& ch) {
    std::map<std::string, std::size_t> last_read;  // value -> the last node of r reading it
    for (std::size_t i : r.nodes)
      for (const std::string& v : r.steps.at(i).operands) last_read[v] = i;
    Values values;
    std::set<std::string> costly;
    for (const std::string& x : r.inputs) {
      Expr e;
      e.channels = ch.at(x);
      e.terms.push_back({x, reparam::identity_map(e.channels)});
      e.constant.assign(static_cast<std::size_t>(e.channels), 0.0);
      values.emplace(x, std::move(e));
    }
    // A border must hold c by a step that reads across pixels or other values, and at the end.
    const auto settled = [&](const std::string& v) -> std::optional<Failure> {
      Expr& e = values.at(v);
      if (!e.border) return std::nullopt;
      if (auto why = border_problem(e)) {
        // Cut in front of the Pad (a Pad of a value whose constant part is what it pads with
        // still merges into what follows), else after the writes into its border.
        const auto inside = [&](const std::string& value) {
          return std::find(r.inputs.begin(), r.inputs.end(), value) == r.inputs.end();
        };
        std::vector<std::string> cut;
        if (inside(e.border->before)) {
          cut.push_back(e.border->before);
        } else if (inside(v) && v != g_.nodes()[r.nodes.back()].outputs[0]) {
          cut.push_back(v);
        }
        return Failure{*why, cut};
      }
      e.border.reset();
      return std::nullopt;
    };
    for (std::size_t i : r.nodes) {
      const graph::Node& n = g_.nodes()[i];
      Step& s = r.steps.at(i);
      if (s.kind != StepKind::Affine && s.kind != StepKind::Fill)
        for (const std::string& v : s.operands)
          if (auto f = settled(v)) return *f;
      try {
        const bool last = s.operands.size() == 1 && last_read.at(s.operands[0]) == i;
        Expr out = apply(n, s, values, last, costly);
        std::vector<double>().swap(s.map.weight);
        for (const std::string& v : s.operands)
          if (last_read.at(v) == i) values.at(v) = outline_of(values.at(v));
        values[n.outputs[0]] = std::move(out);
      } catch (const CostlyComposition& c) {
        if (std::find(r.inputs.begin(), r.inputs.end(), c.value) != r.inputs.end())
          return Failure{};  // nothing left to cut (an input's map is the identity: not reached)
        return Failure{{}, {c.value}, true};
      } catch (const Error& e) {
        // The step's operands inside the region become boundaries (the inputs already are).
        std::vector<std::string> cut;
        for (const std::string& v : s.operands)
          if (std::find(r.inputs.begin(), r.inputs.end(), v) == r.inputs.end()) cut.push_back(v);
        std::string why = without_prefix(e.message());
        if (why.rfind(describe(n), 0) != 0) why = describe(n) + ": " + why;
        return Failure{why, cut};
      }
    }
    if (auto f = settled(g_.nodes()[r.nodes.back()].outputs[0])) return *f;
    return Evaluated{std::move(values), std::move(costly)};
  }

  // Equal up to float32 rounding, relative to the largest magnitude of the values compared: an
  // exporter computes a pad value (DBB's pad_values, β − μ·γ/√(σ² + ε)) and the bias of the
  // conv it folded that BN into ((b − μ)·γ/√(σ² + ε) + β) by two float32 formulas, which may
  // differ in the last bits — a difference that moves the output by far less than
  // docs/testing.md's tolerance. 2⁻¹⁸ is 64 float32 ulps.
  static constexpr double kRounding = 1.0 / (1 << 18);

  // Why the border of `e` does not hold its constant part, or nullopt.
  static std::optional<std::string> border_problem(const Expr& e) {
    const Border& b = *e.border;
    // (channel, value) of every border element, or of every channel while it holds one value.
    std::vector<std::pair<std::int64_t, double>> held;
    if (b.plane.empty()) {
      for (std::size_t c = 0; c < b.value.size(); ++c)
        held.emplace_back(static_cast<std::int64_t>(c), b.value[c]);
    } else {
      const std::int64_t channels = b.shape[1], h = b.shape[2], w = b.shape[3];
      for (std::size_t k = 0; k < b.plane.size(); ++k) {
        const auto at = static_cast<std::int64_t>(k);
        if (b.in_border(at / w % h, at % w)) held.emplace_back(at / (h * w) % channels, b.plane[k]);
      }
    }
    double scale = 0;
    for (const auto& [c, v] : held)
      scale = std::max({scale, std::abs(v), std::abs(e.constant[static_cast<std::size_t>(c)])});
    for (const auto& [c, v] : held) {
      const double want = e.constant[static_cast<std::size_t>(c)];
      if (std::abs(v - want) <= kRounding * scale) continue;
      if (!b.written)
        return fmt::format(
            "{} pads with {} where the merged conv would read {} (channel {} of what the region "
            "computes for a zero input)",
            b.pad, b.pad_value, want, c);
      return fmt::format(
          "the border of {} holds {} in channel {} where the merged conv would read {} (what the "
          "region computes for a zero input)",
          b.pad, v, c, want);
    }
    return std::nullopt;
  }

  // The border's elements, from its per-channel values, over the static shape of `v`.
  void spread(Border& b, std::int64_t channels, const std::string& v, const graph::Node& n) {
    if (!b.plane.empty()) return;
    const std::optional<Shape> shape = shapes().shape(v);
    if (!shape || shape->size() != 4 || (*shape)[1] != channels)
      fail("{}: the shape of '{}' is not known to be a static [N, {}, H, W]", describe(n), v,
           channels);
    b.shape = *shape;
    const std::int64_t hw = b.shape[2] * b.shape[3];
    b.plane.resize(static_cast<std::size_t>(b.shape[0] * channels * hw));
    for (std::size_t k = 0; k < b.plane.size(); ++k)
      b.plane[k] = b.value[static_cast<std::size_t>(static_cast<std::int64_t>(k) / hw % channels)];
  }

  // A write into the border (a Fill step): every element it changes lies in the border.
  void fill(const graph::Node& n, const Step& s, Expr& e) {
    if (!e.border)
      fail("{} writes into a value whose border no Pad of the region wrote", describe(n));
    Border& b = *e.border;
    spread(b, e.channels, s.operands[0], n);
    const auto where = [&](std::size_t k) {
      const auto at = static_cast<std::int64_t>(k);
      return std::pair{at / b.shape[3] % b.shape[2], at % b.shape[3]};
    };
    if (s.fill == FillOp::Scatter) {
      // Which elements the ScatterND writes and what, by the op's own kernel on markers.
      const Shape& us = s.updates.sizes();
      const std::vector<float> written =
          reference::scatter_nd(zeros(b.shape), s.indices, ones(us)).to_vector();
      const std::vector<float> put =
          reference::scatter_nd(zeros(b.shape), s.indices, s.updates).to_vector();
      for (std::size_t k = 0; k < written.size(); ++k) {
        if (written[k] == 0) continue;
        const auto [h, w] = where(k);
        if (!b.in_border(h, w))
          fail("{} writes inside the border of {} (row {}, column {})", describe(n), b.pad, h, w);
        b.plane[k] = put[k];
      }
    } else {
      // The constant as the value's shape; it must not enlarge it, nor change the inside.
      const Tensor& k = s.updates;
      Shape target = b.shape;
      bool fits = k.dim() <= 4;
      for (std::int64_t d = 0; fits && d < k.dim(); ++d) {
        const std::int64_t kd = k.size(k.dim() - 1 - d);
        fits = kd == 1 || kd == target[static_cast<std::size_t>(3 - d)];
      }
      if (!fits)
        fail("{}: the constant [{}] does not broadcast to '{}' [{}]", describe(n),
             fmt::join(k.sizes(), ", "), s.operands[0], fmt::join(b.shape, ", "));
      const std::vector<float> full = reference::expand(k, target).to_vector();
      const double neutral = s.fill == FillOp::Add ? 0.0 : 1.0;
      for (std::size_t i = 0; i < full.size(); ++i) {
        const auto [h, w] = where(i);
        if (!b.in_border(h, w)) {
          if (full[i] != neutral)
            fail("{}: the constant is {} inside the border of {} (row {}, column {}), not {}",
                 describe(n), full[i], b.pad, h, w, neutral);
          continue;
        }
        b.plane[i] = s.fill == FillOp::Add   ? b.plane[i] + full[i]
                     : s.fill == FillOp::Mul ? b.plane[i] * full[i]
                                             : b.plane[i] / full[i];
      }
    }
    b.written = true;
  }

  detail::StaticShapes& shapes() {
    if (!shapes_) shapes_.emplace(g_);
    return *shapes_;
  }

  // `last`: the step reads one value and is its last reader, so a pointwise step may take it.
  Expr apply(const graph::Node& n, const Step& s, Values& values, bool last,
             std::set<std::string>& costly) {
    Expr& a = values.at(s.operands[0]);
    const auto take = [&] {
      if (!last) return a;
      Expr e = std::move(a);
      a = outline_of(e);  // what cost() reads of it
      return e;
    };
    switch (s.kind) {
      case StepKind::Affine: {
        Expr e = take();
        const std::vector<double> scale = per_channel(s.scale, e.channels, n);
        const std::vector<double> shift = per_channel(s.shift, e.channels, n);
        for (Term& t : e.terms) t.map = reparam::scaled(t.map, scale);
        for (std::size_t c = 0; c < e.constant.size(); ++c)
          e.constant[c] = e.constant[c] * scale[c] + shift[c];
        if (e.border) {  // pointwise: the border's values map as every other value does
          Border& b = *e.border;
          for (std::size_t c = 0; c < b.value.size(); ++c)
            b.value[c] = b.value[c] * scale[c] + shift[c];
          const std::int64_t hw = b.plane.empty() ? 1 : b.shape[2] * b.shape[3];
          for (std::size_t k = 0; k < b.plane.size(); ++k) {
            const auto c = static_cast<std::size_t>(static_cast<std::int64_t>(k) / hw % e.channels);
            b.plane[k] = b.plane[k] * scale[c] + shift[c];
          }
          b.written = true;
        }
        return e;
      }
      case StepKind::Fill: {
        Expr e = take();
        fill(n, s, e);
        return e;
      }
      case StepKind::Sum: {
        Expr e = a;
        e.border.reset();  // every operand's border holds its c (evaluate settled it)
        e.terms.clear();
        e.branches = 0;
        e.constant = per_channel(s.shift, a.channels, n);
        for (std::size_t k = 0; k < s.operands.size(); ++k) {
          const Expr& v = values.at(s.operands[k]);
          if (v.channels != e.channels)
            fail("{} sums {} and {} channels", describe(n), e.channels, v.channels);
          const std::vector<double> sign(static_cast<std::size_t>(v.channels), s.signs[k]);
          for (const Term& t : v.terms) {
            const ConvMap m = reparam::scaled(t.map, sign);
            const auto same = std::find_if(e.terms.begin(), e.terms.end(),
                                           [&](const Term& u) { return u.input == t.input; });
            if (same == e.terms.end()) {
              e.terms.push_back({t.input, m});
            } else {
              try {
                same->map = reparam::plus(same->map, m);
              } catch (const Error& err) {
                fail("{}: {}", describe(n), without_prefix(err.message()));
              }
            }
          }
          for (std::size_t c = 0; c < e.constant.size(); ++c)
            e.constant[c] += s.signs[k] * v.constant[c];
          e.branches += v.branches;
        }
        return e;
      }
      case StepKind::Conv:
      case StepKind::AvgPool: {
        const ConvMap pool =
            s.kind == StepKind::AvgPool
                ? reparam::avg_pool_map(a.channels, s.map.kernel, s.map.stride, s.map.pads)
                : ConvMap{};
        const ConvMap& m = s.kind == StepKind::AvgPool ? pool : s.map;
        if (m.in_channels != a.channels)
          fail("{} reads {} channels, the region gives {}", describe(n), m.in_channels, a.channels);
        check_spatial(n, a, m.pads, 0.0, !m.pointwise() || m.pads != Pads2d{});
        Expr e;
        e.channels = m.out_channels;
        e.branches = a.branches;
        for (const Term& t : a.terms) {
          const double apart =
              t.map.macs() * static_cast<double>(m.stride.h * m.stride.w) + m.macs();
          const double composed = reparam::then_macs(t.map, m);
          if (composed > apart) {
            costly.insert(s.operands[0]);
            if (composed > kLargestCostlyMap) throw CostlyComposition{s.operands[0]};
          }
          e.terms.push_back({t.input, reparam::then(t.map, m)});
        }
        // Where x is zero the region is the constant c, and the conv reads c at every tap
        // (it pads with zeros only where c is 0): b + Σ_taps W·c.
        e.constant = reparam::apply_to_constant(m, a.constant);
        for (std::size_t o = 0; o < s.bias.size(); ++o) e.constant[o] += s.bias[o];
        return e;
      }
      case StepKind::Border: {
        check_spatial(n, a, {}, 0, true);
        Expr e = take();
        for (Term& t : e.terms) t.map = reparam::padded(t.map, s.border);
        const Pads2d& q = s.border;
        if (q.top > 0 || q.left > 0 || q.bottom > 0 || q.right > 0) {
          // What the Pad writes is checked against c once the pointwise steps after it are read.
          Border b;
          b.pad = describe(n);
          b.before = s.operands[0];
          b.pads = {std::max<std::int64_t>(q.top, 0), std::max<std::int64_t>(q.left, 0),
                    std::max<std::int64_t>(q.bottom, 0), std::max<std::int64_t>(q.right, 0)};
          b.pad_value = s.pad_value;
          b.value.assign(static_cast<std::size_t>(e.channels), s.pad_value);
          e.border = std::move(b);
        }
        return e;
      }
    }
    return a;
  }

  // A step that moves pixels (a conv or pool with a window, a stride or padding, a pad or a
  // crop) applies to one input only (a sum of several may broadcast one of them), and wherever
  // it pads, the region's constant part must be what it pads with.
  static void check_spatial(const graph::Node& n, const Expr& a, const Pads2d& pads, double value,
                            bool moves_pixels) {
    if (moves_pixels && a.terms.size() != 1)
      fail("{} is applied to a sum of {} different inputs", describe(n), a.terms.size());
    const bool pads_any = pads.top > 0 || pads.left > 0 || pads.bottom > 0 || pads.right > 0;
    if (!pads_any) return;
    double scale = std::abs(value);
    for (double c : a.constant) scale = std::max(scale, std::abs(c));
    for (std::size_t c = 0; c < a.constant.size(); ++c)
      if (std::abs(a.constant[c] - value) > kRounding * scale)
        fail(
            "{} pads with {} where the merged conv would read {} (channel {} of what the region "
            "computes for a zero input)",
            describe(n), value, a.constant[c], c);
  }

  // The cost model, per pixel of the root's output: a node's multiply-adds plus
  // kWriteCost for each value it writes (a pass over memory costs about as much as that many
  // multiply-adds on the CPUs refold targets), so two small convs and their Add may become one
  // larger conv, and a conv never grows into one that does much more arithmetic.
  static constexpr double kWriteCost = 16;
  struct Cost {
    double region = 0, merged = 0;
  };

  Cost cost(const Region& r, const Expr& root, const Values& values) const {
    Cost c;
    for (const Term& t : root.terms)
      if (!is_plain_identity(t.map))
        c.merged += t.map.macs() + kWriteCost * static_cast<double>(t.map.out_channels);
    c.merged += kWriteCost * static_cast<double>(root.channels * (root.terms.size() - 1));
    for (std::size_t i : r.nodes) {
      const Step& s = r.steps.at(i);
      // The node's pixels per root pixel: the strides from its input to the root's output
      // that come after it.
      const Expr& e = values.at(g_.nodes()[i].outputs[0]);
      double pixels = 1;
      if (e.terms.size() == 1) {
        const auto in_root = std::find_if(root.terms.begin(), root.terms.end(), [&](const Term& t) {
          return t.input == e.terms[0].input;
        });
        const Size2d at = e.terms[0].map.stride, end = in_root->map.stride;
        pixels = static_cast<double>(end.h * end.w) / static_cast<double>(at.h * at.w);
      }
      const double channels = static_cast<double>(e.channels);
      c.region += pixels * (kWriteCost * channels +
                            (s.kind == StepKind::Conv ? s.map.macs()
                             : s.kind == StepKind::AvgPool
                                 ? channels * static_cast<double>(s.map.kernel.h * s.map.kernel.w)
                                 : channels));
    }
    return c;
  }

  // Tries the region ending at node `root`; returns the index after which the scan goes on
  // when it rewrote the graph.
  std::optional<std::size_t> merge(std::size_t root) {
    const std::string root_name = g_.nodes()[root].name;
    std::string first_failure;
    for (;;) {
      const Region outline = collect(root, /*values=*/false);
      if (outline.nodes.size() < 2) return std::nullopt;
      const bool has_conv =
          std::any_of(outline.nodes.begin(), outline.nodes.end(), [&](std::size_t i) {
            const StepKind k = outline.steps.at(i).kind;
            return k == StepKind::Conv || k == StepKind::AvgPool;
          });
      if (!has_conv) return std::nullopt;
      // A region no larger than any rewrite of it stays as it is, and neither can a part of it
      // merge on its own (its rewrite would leave the region at least that large): its
      // weights are never composed. A ResNet's downsampling block, two convs and an Add over
      // two inputs, would otherwise hold five float64 copies of its widest weight at once.
      if (fewest_rewritten_nodes(outline) >= outline.nodes.size()) {
        if (outline.inputs.size() > 1 && branches_in(outline) >= 2 &&
            noted_.insert(root_name + "#apart").second)
          note_apart(root, outline);
        return std::nullopt;
      }
      Region r = collect(root);
      const auto ch = channels_of(r);
      for (const std::string& x : r.inputs)
        if (!ch.count(x)) return std::nullopt;
      auto value = evaluate(r, ch);
      if (auto* f = std::get_if<Failure>(&value)) {
        if (!f->quiet) {
          if (first_failure.empty()) first_failure = f->why;
          if (branches_in(r) >= 2 && noted_.insert(root_name).second)
            note_kept(root, r, first_failure);
        }
        if (f->cut.empty()) return std::nullopt;
        for (const std::string& v : f->cut) cuts_.insert(v);
        continue;
      }
      Evaluated& done = std::get<Evaluated>(value);
      Values& values = done.values;
      Expr& root_value = values.at(g_.nodes()[root].outputs[0]);
      Expr result = std::move(root_value);  // into the rewrite; cost() reads its outline
      root_value = outline_of(result);
      const std::size_t terms = result.terms.size();
      const auto at = rewrite(root, r, std::move(result), values, done.costly);
      if (at || !retry_) {
        if (!at && terms > 1 && branches_in(r) >= 2 && noted_.insert(root_name + "#apart").second)
          note_apart(root, r);
        return at;
      }
      retry_ = false;  // cut where a composition cost more than its parts; try again
    }
  }

  int branches_in(const Region& r) const {
    int sums = 0;
    for (std::size_t i : r.nodes)
      if (r.steps.at(i).kind == StepKind::Sum) ++sums;
    return sums == 0 ? 1 : sums + 1;
  }

  void note_kept(std::size_t root, const Region& r, const std::string& why) {
    report_.notes.push_back(
        fmt::format("did not merge the region ending at {} over '{}' whole: branch mismatch: {}",
                    describe(g_.nodes()[root]), fmt::join(r.inputs, "', '"), without_prefix(why)));
  }

  // A block whose sum reads another input: why each input that a linear node writes (a
  // branch the user may have expected to merge) is a boundary of the region.
  void note_apart(std::size_t root, const Region& r) {
    static const std::set<std::string> maybe_linear = {"Conv",        "BatchNormalization",
                                                       "AveragePool", "Pad",
                                                       "Slice",       "ScatterND",
                                                       "Add",         "Sub",
                                                       "Mul",         "Div",
                                                       "Sum"};
    for (const std::string& v : r.inputs) {
      const auto p = g_.producer(v);
      if (!p || maybe_linear.count(g_.nodes()[*p].op_type) == 0) continue;
      std::string why;
      if (g_.is_graph_output(v)) {
        why = fmt::format("'{}' is a graph output", v);
      } else if (const std::size_t n = reads(v); n != 1) {
        std::string readers;
        for (std::size_t c : g_.consumers(v))
          readers += (readers.empty() ? "" : ", ") + describe(g_.nodes()[c]);
        why = fmt::format("'{}' has {} consumers ({})", v, n, readers);
      } else if (const auto step = read_step(g_, g_.nodes()[*p], false);
                 const auto* reason = std::get_if<std::string>(&step)) {
        why = *reason;
      } else {
        continue;  // a cut: its reason is noted with its region
      }
      report_.notes.push_back(fmt::format(
          "kept the branch through '{}' out of the region ending at {}: branch mismatch: {}", v,
          describe(g_.nodes()[root]), why));
    }
  }

  static std::string without_prefix(const std::string& why) {
    static const std::string prefix = "branch mismatch: ";
    return why.rfind(prefix, 0) == 0 ? why.substr(prefix.size()) : why;
  }

  std::optional<std::size_t> rewrite(std::size_t root, const Region& r, Expr value,
                                     const Values& values, const std::set<std::string>& costly) {
    // The conv the merged one is named after and takes its dtype and weight layout from.
    const auto lead = std::find_if(r.nodes.begin(), r.nodes.end(), [&](std::size_t i) {
      return r.steps.at(i).kind == StepKind::Conv;
    });
    std::vector<const Term*> convs;  // in value.terms, which cost() reads too
    std::vector<std::string> plain;
    for (Term& t : value.terms) {
      if (is_plain_identity(t.map)) {
        plain.push_back(t.input);
      } else {
        t.map = reparam::compact_groups(t.map);
        convs.push_back(&t);
      }
    }
    const std::size_t new_nodes = convs.size() + value.terms.size() - 1;
    if (convs.empty() || new_nodes >= r.nodes.size()) return std::nullopt;
    const Cost c = cost(r, value, values);
    const std::string root_name = g_.nodes()[root].name;
    if (c.merged > c.region) {
      bool cut = false;
      for (const std::string& v : costly) cut = cuts_.insert(v).second || cut;
      if (cut) {
        retry_ = true;
        return std::nullopt;
      }
      if (noted_.insert(root_name).second)
        note_kept(root, r,
                  fmt::format("one conv would cost {} multiply-adds per output pixel, the region "
                              "{}",
                              c.merged, c.region));
      return std::nullopt;
    }
    for (const Term* conv : convs) {
      const Term& t = *conv;
      if (!proven_4d(r, t.input)) return std::nullopt;  // a conv needs 4-d; x may broadcast
      const Pads2d& p = t.map.pads;
      if (p.top < 0 || p.left < 0 || p.bottom < 0 || p.right < 0) {
        if (noted_.insert(root_name).second)
          note_kept(root, r,
                    fmt::format("the merged conv over '{}' would need negative padding ({})",
                                t.input, reparam::geometry_text(t.map)));
        return std::nullopt;
      }
    }
    const graph::Node* lead_node = lead == r.nodes.end() ? nullptr : &g_.nodes()[*lead];
    const auto lead_conv = lead_node ? detail::conv_module(*lead_node) : nullptr;
    const DType dtype = lead_conv ? lead_conv->weight().dtype() : DType::Float32;
    const MemoryFormat format =
        lead_conv ? lead_conv->weight().suggest_memory_format() : MemoryFormat::Contiguous;
    const std::string base = lead_node ? lead_node->name : root_name;
    const std::string out = g_.nodes()[root].outputs[0];

    std::string listing;
    for (std::size_t i : r.nodes)
      listing += (listing.empty() ? "" : ", ") + describe(g_.nodes()[i]);
    std::vector<graph::Node> made;
    std::vector<std::string> sums = plain;
    for (std::size_t k = 0; k < convs.size(); ++k) {
      const ConvMap& m = convs[k]->map;
      const bool last = convs.size() == 1 && plain.empty();  // no Add after it
      auto geometry =
          nn::Conv2dOptions(m.in_channels, m.out_channels, m.kernel)
              .stride(m.stride)
              .padding(Padding2d::asymmetric(m.pads.top, m.pads.left, m.pads.bottom, m.pads.right))
              .dilation(m.dilation)
              .groups(m.groups);
      const std::vector<double> bias =
          k == 0 && !all_zero(value.constant) ? value.constant : std::vector<double>{};
      graph::Node node;
      node.name = k == 0 ? base : g_.unique_name(base + "_" + std::to_string(k));
      node.outputs = {last ? out : g_.unique_name(out + "_" + std::to_string(k))};
      detail::set_conv(g_, node, convs[k]->input, g_.unique_name(base + "_reparam"),
                       reparam::to_kernel(m, bias, dtype), geometry, format);
      sums.push_back(node.outputs[0]);
      made.push_back(std::move(node));
    }
    // The sum of the parts, the last Add writing the root's value.
    for (std::size_t k = 1; k < sums.size(); ++k) {
      graph::Node add;
      // The last Add takes the root's name, free once the region is erased.
      add.name =
          k + 1 == sums.size() ? root_name : g_.unique_name(root_name + "_" + std::to_string(k));
      add.op_type = "Add";
      add.inputs = {k == 1 ? sums[0] : made.back().outputs[0], sums[k]};
      add.outputs = {k + 1 == sums.size() ? out : g_.unique_name(out + "_sum" + std::to_string(k))};
      add.module = module_for(g_, add);
      made.push_back(std::move(add));
    }
    for (graph::Node& n : made) n.origin = "reparameterized " + listing;
    report_.notes.push_back(fmt::format(
        "{} {} branch{} of '{}' into {}: {}", value.branches >= 2 ? "merged" : "folded",
        value.branches, value.branches == 1 ? "" : "es", fmt::join(r.inputs, "', '"),
        convs.size() == 1 && plain.empty()
            ? fmt::format("one {}x{} Conv '{}'", convs[0]->map.kernel.h, convs[0]->map.kernel.w,
                          made[0].name)
            : fmt::format("{} Conv and {} Add", convs.size(), made.size() - convs.size()),
        listing));
    report_.changed = true;
    linear_.clear();
    return detail::replace_nodes(g_, r.nodes, root, std::move(made));
  }

  graph::Graph& g_;
  PassReport& report_;
  std::optional<detail::StaticShapes> shapes_;  // read by border writes; made again each scan
  std::set<std::string> cuts_;
  bool retry_ = false;  // rewrite() cut the region; merge() reads it again
  mutable std::map<std::string, bool> linear_;
  std::set<std::string> noted_;
};

}  // namespace

PassReport reparameterize_branches(graph::Graph& graph) {
  PassReport report{"reparameterize", false, {}};
  RegionMerger merger(graph, report);
  // A scan merges what it can and cuts where a step is not exact; the parts a cut leaves are
  // regions of the next scan. Each scan cuts at least one more value or stops.
  for (int scans = 0; scans < 64 && merger.scan(); ++scans) {
  }
  graph.verify();
  return report;
}

}  // namespace refold::passes
