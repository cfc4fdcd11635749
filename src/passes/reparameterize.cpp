// reparameterize: parallel branches over one input, summed by an Add tree, become one Conv
// (RepVGG, ACNet, DBB, MobileOne, QARepVGG, YOLO RepConv) — the graph face of
// refold/reparam/kernel_algebra.h, whose functions do all the arithmetic (in double).
//
// Pattern (branch kinds in passes/branch_match.h), e.g. RepVGG as PyTorch exports it:
//   y = Add(Add(Conv3×3(x), Conv1×1(x)), BatchNormalization(x))    [→ BatchNormalization]
// Rewrite:
//   y = Conv3×3'(x)                                  (the last Add's / trailing BN's name)
// Convolution is linear in its kernel, so branches reading the same input pixels add up:
//   Σ_n conv(x; W_n, b_n) = conv(x; Σ_n W_n, Σ_n b_n)
// after each branch is written as a kernel of the largest size K: a BN folds into its conv
// (W·s, (b − μ)·s + β), a k×k kernel is zero-padded centered into K, the identity is a 1 at
// the centre tap per group, AveragePool is 1/(kh·kw) on the channel itself, and 1×1 → K×K in
// series is W[o, c] = Σ_m W2[o, m]·W1[m, c]. A BN after the sum folds into the result.
//
// A branch's window on x sums the paddings along it: a Pad(0) by q before a conv with padding
// p is the conv with p + q; a Slice cropping c is p − c (a negative padding, which only the
// branch may have: it must center in the merged conv like any other). When the whole Add tree
// cannot merge, its inner sub-trees are tried: ((conv3×3(x) + conv1×1(x)) + z) merges the
// inner Add and keeps the outer one.
//
// Preconditions (docs/reliability.md F24; anything else declines with "branch mismatch: …"):
//   - equal stride, groups, in- and out-channels; equal dilation on every axis a kernel spans;
//   - every branch's window centered in K: P − p = d·(K − k)/2 on each side, and P ≥ 0;
//   - identity and AveragePool: C_in == C_out, identity stride 1; AveragePool counting the
//     padding (or unpadded), no ceil_mode or divisor;
//   - 1×1 → K×K: the 1×1 has stride 1; its own padding is fine (it writes its bias b1 there,
//     the value the merged conv assumes), but zeros written after it (a Pad, the K×K's
//     padding) are exact only where b1 = 0 — DBB's BNAndPad writes b1 instead, which a plain
//     ONNX Conv does not;
//   - a crop is not followed by zero padding on the same side (that would read 0 where x has
//     pixels);
//   - constant weights, plain modules, every intermediate value read once by the pattern.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "core/check.h"
#include "passes/branch_match.h"
#include "passes/branch_nodes.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/reparam/module_kernels.h"

namespace refold::passes {
namespace {

using detail::Branch;
using detail::BranchKind;
using detail::describe;

// What a branch looks like once its modules are read: the window it applies to x.
struct Window {
  Size2d kernel = 1;
  Size2d stride = 1;
  Pads2d pads;  // on x: the head's, the Pad's and the core's, summed
  Size2d dilation = 1;
  bool zero_pad_after_head = false;  // a Pad or the core pads the 1×1 head's output with 0
};

// The shared geometry of the merged conv.
struct Target {
  std::int64_t in_channels = 0, out_channels = 0, groups = 1;
  Size2d stride = 1, dilation = 1, kernel = 1;
  Pads2d pads;
  DType dtype = DType::Float32;
  MemoryFormat weight_format = MemoryFormat::Contiguous;
  std::string name;  // the node the merged conv is named after
};

const graph::Node& at(const graph::Graph& g, const Branch& b, std::size_t pos) {
  return g.nodes()[b.chain[pos]];
}

std::shared_ptr<nn::Conv2d> core_conv(const graph::Graph& g, const Branch& b) {
  return b.conv ? detail::conv_module(at(g, b, *b.conv)) : nullptr;
}
std::shared_ptr<nn::Conv2d> head_conv(const graph::Graph& g, const Branch& b) {
  return b.first_conv ? detail::conv_module(at(g, b, *b.first_conv)) : nullptr;
}
bool has_conv(const Branch& b) { return b.conv || b.first_conv; }

Pads2d operator+(const Pads2d& a, const Pads2d& b) {
  return {a.top + b.top, a.left + b.left, a.bottom + b.bottom, a.right + b.right};
}

// A border step: a zero Pad (positive pads) or a cropping Slice (negative pads).
std::variant<Pads2d, std::string> border_of(const graph::Graph& g, const graph::Node& n) {
  return detail::is_op(n, "Pad") ? detail::zero_pad_of(g, n) : detail::crop_of(g, n);
}

// The modules along the chain are the plain ones over constants, and every value inside the
// branch (and the leaf) is read once, by the next node of the pattern.
std::string chain_problem(const graph::Graph& g, const Branch& b) {
  for (std::size_t i = 0; i < b.chain.size(); ++i) {
    const graph::Node& n = g.nodes()[b.chain[i]];
    std::string why;
    if (detail::is_op(n, "Conv")) {
      why = detail::conv_problem(g, n);
    } else if (detail::is_op(n, "BatchNormalization")) {
      why = detail::batch_norm_problem(g, n);
    } else if (detail::is_op(n, "Pad") || detail::is_op(n, "Slice")) {
      const auto pads = border_of(g, n);
      if (const auto* reason = std::get_if<std::string>(&pads)) why = *reason;
    } else if (!detail::avg_pool_module(n)) {
      why = fmt::format("{} is not run by a plain AvgPool2d module", describe(n));
    }
    if (!why.empty()) return why;
    const std::size_t next = i + 1 < b.chain.size() ? b.chain[i + 1] : b.add;
    if (std::string use = detail::single_use_problem(g, n.outputs[0], next); !use.empty())
      return fmt::format("the output of {} {}", describe(n), use);
  }
  return {};
}

std::string size_text(Size2d s) { return fmt::format("{}x{}", s.h, s.w); }

// Reads the branch's window on x and checks what must agree with the target: stride, groups,
// channels, and the rules of each step.
std::variant<Window, std::string> window_of(const graph::Graph& g, const Branch& b,
                                            const Target& t) {
  Window w;
  const auto mismatch = [&](const std::string& why) -> std::string {
    return fmt::format("{}: {}",
                       b.chain.empty() ? fmt::format("identity branch '{}'", b.leaf)
                                       : describe(g.nodes()[b.chain.front()]),
                       why);
  };
  // The spatial core: a conv, an average pool, or nothing (identity).
  Pads2d core_pads;
  std::int64_t in = t.in_channels, out = t.in_channels, groups = t.groups;
  if (const auto c = core_conv(g, b)) {
    const nn::Conv2dOptions& o = c->options();
    w.kernel = o.kernel_size();
    w.stride = o.stride();
    w.dilation = o.dilation();
    core_pads = o.padding().resolve(w.kernel, w.dilation);
    in = o.in_channels();
    out = o.out_channels();
    groups = o.groups();
  } else if (b.pool) {
    const nn::AvgPool2dOptions& o = detail::avg_pool_module(at(g, b, *b.pool))->options();
    w.kernel = o.kernel_size();
    w.stride = o.stride();
    core_pads = {o.padding().h, o.padding().w, o.padding().h, o.padding().w};
    if (o.ceil_mode() || o.divisor_override() || (!o.count_include_pad() && core_pads != Pads2d{}))
      return mismatch(
          "only an AveragePool without ceil_mode or divisor, counting its padding, is a conv");
  }
  // conv(crop_c(x), p) reads what conv(x, p − c) reads, unless it pads the cropped side with
  // zeros where x has pixels; conv(pad_q(x), p) is conv(x, p + q).
  Pads2d border;
  if (b.pad) border = std::get<Pads2d>(border_of(g, at(g, b, *b.pad)));
  const auto cropped_then_padded = [](std::int64_t c, std::int64_t p) { return c < 0 && p > 0; };
  if (cropped_then_padded(border.top, core_pads.top) ||
      cropped_then_padded(border.left, core_pads.left) ||
      cropped_then_padded(border.bottom, core_pads.bottom) ||
      cropped_then_padded(border.right, core_pads.right))
    return mismatch(fmt::format("{} crops what {} then pads with zeros", describe(at(g, b, *b.pad)),
                                describe(at(g, b, b.conv ? *b.conv : *b.pool))));
  w.pads = core_pads + border;
  const bool zeros_written = core_pads != Pads2d{} || border.top > 0 || border.left > 0 ||
                             border.bottom > 0 || border.right > 0;
  if (const auto f = head_conv(g, b)) {
    // x → 1×1 (stride 1) → …: the head's own padding reads x's zero border as its bias, which
    // is what the merged conv assumes; zeros written after it (Pad, the core's padding) are not.
    const nn::Conv2dOptions& fo = f->options();
    const Pads2d fp = fo.padding().resolve(fo.kernel_size(), fo.dilation());
    if (fo.kernel_size() != Size2d(1, 1) || fo.stride() != Size2d(1, 1))
      return mismatch(fmt::format(
          "the first conv of a 1x1 -> KxK branch must be 1x1 with stride 1 (got {}, stride {})",
          size_text(fo.kernel_size()), size_text(fo.stride())));
    w.zero_pad_after_head = zeros_written;
    w.pads = w.pads + fp;
    if (b.conv && fo.groups() != groups)
      return mismatch(
          fmt::format("groups differ inside the branch ({} then {})", fo.groups(), groups));
    if (!b.conv) {
      out = fo.out_channels();
      groups = fo.groups();
    }
    in = fo.in_channels();
  }
  if (!has_conv(b) && t.in_channels != t.out_channels)
    return mismatch(fmt::format("{} needs in_channels == out_channels (got {} and {})",
                                b.pool ? "AveragePool" : "identity", t.in_channels,
                                t.out_channels));
  if (groups != t.groups) return mismatch(fmt::format("groups {} vs {}", groups, t.groups));
  if (out != t.out_channels)
    return mismatch(fmt::format("out_channels {} vs {}", out, t.out_channels));
  if (in != t.in_channels) return mismatch(fmt::format("in_channels {} vs {}", in, t.in_channels));
  if (w.stride != t.stride)
    return mismatch(fmt::format("stride {} vs {}", size_text(w.stride), size_text(t.stride)));
  return w;
}

reparam::ConvKernel folded(const graph::Graph& g, const Branch& b, std::optional<std::size_t> bn,
                           reparam::ConvKernel k) {
  if (!bn) return k;
  return reparam::fold_batch_norm(k, reparam::params_of(*detail::batch_norm_module(at(g, b, *bn))));
}

// The branch as a K×K kernel of the target (throws refold::Error; "branch mismatch: …" for
// a geometry the algebra cannot make exact).
reparam::ConvKernel kernel_of_branch(const graph::Graph& g, const Branch& b, const Window& w,
                                     const Target& t) {
  const auto head = head_conv(g, b);
  reparam::ConvKernel k;
  if (const auto c = core_conv(g, b)) {
    k = reparam::kernel_of(*c);
  } else if (b.pool) {
    // Over the channels it reads: the head's outputs, or x's.
    k = head ? reparam::avg_pool_kernel(head->options().out_channels(), head->options().groups(),
                                        w.kernel, t.dtype)
             : reparam::avg_pool_kernel(t.out_channels, t.groups, w.kernel, t.dtype);
  } else {
    k = reparam::identity_kernel(t.out_channels, t.groups, {1, 1}, t.dtype);
  }
  if (head) {
    // W[o, c] = Σ_m W2[o, m]·W1[m, c], b = b2 + Σ W2·b1 (merge_sequential_1x1_kxk): exact when
    // every pixel the core reads outside x's interior holds b1, the head's response to zero.
    const reparam::ConvKernel first = folded(g, b, b.first_bn, reparam::kernel_of(*head));
    if (w.zero_pad_after_head && first.bias.defined()) {
      const std::vector<float> b1 = first.bias.to_vector();
      if (std::any_of(b1.begin(), b1.end(), [](float v) { return v != 0; }))
        refold::fail(
            "branch mismatch: {} pads with zeros after {}, whose output for a zero input (its "
            "bias) is not zero, so merging the 1x1 -> KxK branch would change the border",
            describe(at(g, b,
                        b.pad    ? *b.pad
                        : b.conv ? *b.conv
                                 : *b.pool)),
            describe(at(g, b, *b.first_conv)));
    }
    k = reparam::merge_sequential_1x1_kxk(first, k);
  }
  return reparam::pad_kernel_to(folded(g, b, b.bn, std::move(k)), t.kernel);
}

std::string branch_text(const graph::Graph& g, const Branch& b) {
  if (b.chain.empty()) return fmt::format("'{}'", b.input);
  std::string out;
  for (std::size_t i : b.chain) out += (out.empty() ? "" : " -> ") + describe(g.nodes()[i]);
  return out;
}

class TreeMerger {
 public:
  TreeMerger(graph::Graph& graph, PassReport& report) : g_(graph), report_(report) {}

  // Tries the tree rooted at the Add `root` and, when it cannot merge as a whole, the
  // sub-trees under it: in ((conv3×3(x) + conv1×1(x)) + z) the block is the inner Add. Returns
  // where the scan resumes (the merged conv, or the root when only sub-trees merged).
  std::optional<std::size_t> run(std::size_t root) {
    if (const auto merged = merge_tree(root, /*whole=*/true)) return merged;
    const std::string root_name = g_.nodes()[root].name;
    if (!merge_subtrees(root)) return std::nullopt;
    return g_.find_node(root_name);
  }

 private:
  // The Adds directly under `add` in its tree, by name (indices move as sub-trees merge).
  std::vector<std::string> inner_children(std::size_t add) const {
    std::vector<std::string> children;
    for (const std::string& in : g_.nodes()[add].inputs) {
      const auto p = g_.producer(in);
      if (p && detail::is_binary_add(g_.nodes()[*p]) && detail::is_inner_add(g_, *p))
        children.push_back(g_.nodes()[*p].name);
    }
    return children;
  }

  bool merge_subtrees(std::size_t add) {
    bool changed = false;
    for (const std::string& name : inner_children(add)) {
      const auto child = g_.find_node(name);
      if (!child) continue;
      if (merge_tree(*child, /*whole=*/false) || merge_subtrees(*child)) changed = true;
    }
    return changed;
  }

  // Merges the tree rooted at `root` (a whole tree may take a BN after it; a sub-tree feeds
  // an Add) and returns the merged conv's index. Only a whole tree's decline is noted: a
  // sub-tree is a second chance, its reasons are the whole tree's.
  std::optional<std::size_t> merge_tree(std::size_t root, bool whole) {
    tree_ = detail::collect_add_tree(g_, root);
    if (!choose_branches()) return std::nullopt;
    if (std::string why = check(); !why.empty()) {
      if (whole) decline(why);
      return std::nullopt;
    }
    reparam::ConvKernel merged;
    try {
      std::vector<reparam::ConvKernel> kernels;
      for (std::size_t i = 0; i < branches_.size(); ++i)
        kernels.push_back(kernel_of_branch(g_, branches_[i], windows_[i], target_));
      merged = reparam::sum_branches(kernels);
    } catch (const Error& e) {
      if (whole) decline(e.message());
      return std::nullopt;
    }
    const std::optional<std::size_t> post = whole ? fold_post_batch_norm(merged) : std::nullopt;
    return replace(merged, post);
  }

  // Reads every leaf as a branch of the input most leaves share. False (silently) when fewer
  // than two leaves share one with a conv among them: an ordinary residual Add, not a block.
  bool choose_branches() {
    std::vector<std::vector<Branch>> readings;
    std::map<std::string, int> votes;
    std::map<std::string, bool> has_conv;
    std::vector<std::string> order;
    for (std::size_t i = 0; i < tree_.leaves.size(); ++i) {
      readings.push_back(detail::interpret_leaf(g_, tree_.leaves[i], tree_.leaf_adds[i]));
      std::set<std::string> seen;
      for (const Branch& b : readings.back()) {
        if (b.kind == BranchKind::Conv || b.kind == BranchKind::Sequential)
          has_conv[b.input] = true;
        if (!seen.insert(b.input).second) continue;
        if (votes[b.input]++ == 0) order.push_back(b.input);
      }
    }
    std::string best;
    for (const std::string& x : order) {
      if (!has_conv[x]) continue;
      if (best.empty() || votes[x] > votes[best]) best = x;
    }
    if (best.empty() || votes[best] < 2) return false;
    input_ = best;
    branches_.clear();
    missing_.clear();
    for (std::size_t i = 0; i < readings.size(); ++i) {
      const auto it = std::find_if(readings[i].begin(), readings[i].end(),
                                   [&](const Branch& b) { return b.input == input_; });
      if (it == readings[i].end()) {
        missing_.push_back(tree_.leaves[i]);
      } else {
        branches_.push_back(*it);
      }
    }
    return true;
  }

  std::string check() {
    if (!missing_.empty())
      return fmt::format("'{}' is not a conv, pooling or identity branch of '{}'", missing_.front(),
                         input_);
    for (const Branch& b : branches_) {
      if (std::string why = chain_problem(g_, b); !why.empty()) return why;
    }
    // The target geometry from the first branch with a conv; the others must agree with it.
    const auto lead = std::find_if(branches_.begin(), branches_.end(), has_conv);
    if (lead == branches_.end()) return fmt::format("no branch of '{}' has a conv", input_);
    const auto core = core_conv(g_, *lead), head = head_conv(g_, *lead);
    const nn::Conv2d& named = core ? *core : *head;
    target_ = {};
    target_.out_channels = named.options().out_channels();
    target_.in_channels = (head ? *head : *core).options().in_channels();
    target_.groups = named.options().groups();
    target_.stride = core ? core->options().stride()
                          : detail::avg_pool_module(at(g_, *lead, *lead->pool))->options().stride();
    target_.dtype = named.weight().dtype();
    target_.weight_format = named.weight().suggest_memory_format();
    target_.name = at(g_, *lead, lead->conv ? *lead->conv : *lead->first_conv).name;
    // Dilation: the one of every branch whose kernel spans the axis (must agree); a 1-tap axis
    // reads the same pixel under any dilation.
    target_.dilation = core ? core->options().dilation() : Size2d(1, 1);
    windows_.clear();
    bool set_h = false, set_w = false;
    for (const Branch& b : branches_) {
      auto w = window_of(g_, b, target_);
      if (auto* why = std::get_if<std::string>(&w)) return *why;
      const Window& win = std::get<Window>(w);
      const std::string who =
          b.chain.empty() ? fmt::format("'{}'", b.leaf) : describe(g_.nodes()[b.chain.front()]);
      if (win.kernel.h > 1) {
        if (set_h && win.dilation.h != target_.dilation.h)
          return fmt::format("{}: dilation {} vs {}", who, win.dilation.h, target_.dilation.h);
        target_.dilation.h = win.dilation.h;
        set_h = true;
      }
      if (win.kernel.w > 1) {
        if (set_w && win.dilation.w != target_.dilation.w)
          return fmt::format("{}: dilation {} vs {}", who, win.dilation.w, target_.dilation.w);
        target_.dilation.w = win.dilation.w;
        set_w = true;
      }
      target_.kernel = {std::max(target_.kernel.h, win.kernel.h),
                        std::max(target_.kernel.w, win.kernel.w)};
      windows_.push_back(win);
    }
    // Target padding from the lead branch: P = p + d·(K − k)/2 on each side.
    const Window& lw = windows_[static_cast<std::size_t>(lead - branches_.begin())];
    const std::int64_t dh = target_.kernel.h - lw.kernel.h, dw = target_.kernel.w - lw.kernel.w;
    if (dh % 2 != 0 || dw % 2 != 0)
      return fmt::format("{} ({}) cannot be centered in {}", describe(g_.nodes()[lead->chain[0]]),
                         size_text(lw.kernel), size_text(target_.kernel));
    const std::int64_t ph = target_.dilation.h * dh / 2, pw = target_.dilation.w * dw / 2;
    target_.pads = {lw.pads.top + ph, lw.pads.left + pw, lw.pads.bottom + ph, lw.pads.right + pw};
    // check_branch_alignment compares P − p per side; a cropped branch has p < 0, so both
    // sides are shifted by the same amount first, which leaves every P − p as it is.
    std::int64_t shift = 0;
    for (const Window& w : windows_)
      for (std::int64_t v : {w.pads.top, w.pads.left, w.pads.bottom, w.pads.right})
        shift = std::max(shift, -v);
    const auto shifted = [&](const Pads2d& p) {
      return Padding2d::asymmetric(p.top + shift, p.left + shift, p.bottom + shift,
                                   p.right + shift);
    };
    for (std::size_t i = 0; i < branches_.size(); ++i) {
      try {
        reparam::check_branch_alignment(windows_[i].kernel, shifted(windows_[i].pads),
                                        target_.kernel, shifted(target_.pads), target_.dilation);
      } catch (const Error& e) {
        return fmt::format("{}: {}", branch_text(g_, branches_[i]), e.message());
      }
    }
    const Pads2d& P = target_.pads;
    if (P.top < 0 || P.left < 0 || P.bottom < 0 || P.right < 0)
      return fmt::format("the merged {} conv would need negative padding ({}, {}, {}, {})",
                         size_text(target_.kernel), P.top, P.left, P.bottom, P.right);
    return {};
  }

  // QARepVGG: a BN reading the sum folds into the merged kernel. Returns the BN's index when
  // folded; a BN that cannot fold stays after the merged conv, with a note.
  std::optional<std::size_t> fold_post_batch_norm(reparam::ConvKernel& merged) {
    const std::string& out = g_.nodes()[tree_.root].outputs[0];
    const std::vector<std::size_t> users = g_.consumers(out);
    if (users.size() != 1 || !detail::is_op(g_.nodes()[users[0]], "BatchNormalization"))
      return std::nullopt;
    const graph::Node& bn = g_.nodes()[users[0]];
    std::string why = detail::batch_norm_problem(g_, bn);
    if (why.empty()) why = detail::single_use_problem(g_, out, users[0]);
    if (why.empty()) {
      try {
        merged =
            reparam::fold_batch_norm(merged, reparam::params_of(*detail::batch_norm_module(bn)));
        return users[0];
      } catch (const Error& e) {
        why = e.message();
      }
    }
    report_.notes.push_back(
        fmt::format("kept {} after the merged branches of '{}': {}", describe(bn), input_, why));
    return std::nullopt;
  }

  std::size_t replace(const reparam::ConvKernel& merged, std::optional<std::size_t> post) {
    std::vector<std::size_t> erase = tree_.adds;
    for (const Branch& b : branches_) erase.insert(erase.end(), b.chain.begin(), b.chain.end());
    if (post) erase.push_back(*post);
    std::sort(erase.begin(), erase.end());
    const std::size_t anchor = post ? *post : tree_.root;

    auto geometry = nn::Conv2dOptions(target_.in_channels, target_.out_channels, target_.kernel)
                        .stride(target_.stride)
                        .padding(Padding2d::asymmetric(target_.pads.top, target_.pads.left,
                                                       target_.pads.bottom, target_.pads.right))
                        .dilation(target_.dilation)
                        .groups(target_.groups);
    auto module = reparam::make_conv2d(merged, geometry, target_.weight_format);

    graph::Node node;
    node.name = target_.name;  // free once the branches are erased
    node.op_type = "Conv";
    node.module = module;
    node.attributes = detail::conv_attributes(*module);
    node.outputs = {g_.nodes()[anchor].outputs[0]};
    std::string merged_names;
    for (std::size_t i : erase)
      merged_names += (merged_names.empty() ? "" : " + ") + g_.nodes()[i].name;
    node.origin = "reparameterized " + merged_names;
    node.inputs = detail::add_parameter_constants(
        g_, input_, g_.unique_name(target_.name + "_reparam"), module->weight(), module->bias());

    std::string listing;
    for (const Branch& b : branches_) listing += (listing.empty() ? "" : ", ") + branch_text(g_, b);
    report_.notes.push_back(fmt::format("merged {} branches of '{}' into one {} Conv '{}': {}{}",
                                        branches_.size(), input_, size_text(target_.kernel),
                                        node.name, listing,
                                        post ? ", then " + describe(g_.nodes()[*post]) : ""));
    report_.changed = true;
    return detail::replace_nodes(g_, erase, anchor, std::move(node));
  }

  void decline(const std::string& why) {
    report_.notes.push_back(fmt::format("kept the Add tree {} over '{}': branch mismatch: {}",
                                        describe(g_.nodes()[tree_.root]), input_,
                                        strip_prefix(why)));
  }

  // The algebra's own "branch mismatch: " prefix is not repeated.
  static std::string strip_prefix(const std::string& why) {
    static const std::string prefix = "branch mismatch: ";
    return why.rfind(prefix, 0) == 0 ? why.substr(prefix.size()) : why;
  }

  graph::Graph& g_;
  PassReport& report_;
  detail::AddTree tree_;
  std::string input_;
  std::vector<Branch> branches_;
  std::vector<std::string> missing_;
  std::vector<Window> windows_;
  Target target_;
};

}  // namespace

PassReport reparameterize_branches(graph::Graph& graph) {
  PassReport report{"reparameterize", false, {}};
  TreeMerger merger(graph, report);
  for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
    if (!detail::is_binary_add(graph.nodes()[i]) || detail::is_inner_add(graph, i)) continue;
    // The merged conv replaces nodes at and before i; the scan goes on after it.
    if (const auto merged = merger.run(i)) i = *merged;
  }
  graph.verify();
  return report;
}

}  // namespace refold::passes
