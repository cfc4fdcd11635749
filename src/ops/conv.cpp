// Conv and ConvTranspose: nn::Conv2d / nn::ConvTranspose2d over the graph's constant weights
// when the padding is known at build time, else Conv / ConvTranspose.
#include "ops/conv.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "core/check.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/conv.h"

namespace refold::ops {

namespace {

// ⌊x / 2⌋ for any sign (Python's //, which the ONNX reference uses).
std::int64_t floor_half(std::int64_t x) { return x >= 0 ? x / 2 : -((-x + 1) / 2); }

// A 1-d conv (X [N, C, L], W [M, C/group, k]) is the 2-d conv of [N, C, 1, L] by [M, C/group,
// 1, k] with its attributes lifted (lift_1d_window): runs `run_2d` on the lifted operands and
// drops the unit axis again. Returns nullopt for anything else.
template <typename Run>
std::optional<std::vector<Tensor>> run_1d_as_2d(const std::vector<Tensor>& in, Run&& run_2d) {
  if (in.size() < 2 || !in[0].defined() || !in[1].defined() || in[0].dim() != 3 || in[1].dim() != 3)
    return std::nullopt;
  auto lift = [](const Tensor& t) { return t.reshape({t.size(0), t.size(1), 1, t.size(2)}); };
  std::vector<Tensor> lifted = in;
  lifted[0] = lift(in[0]);
  lifted[1] = lift(in[1]);
  const Tensor y = run_2d(lifted).at(0);
  return std::vector<Tensor>{y.reshape({y.size(0), y.size(1), y.size(3)})};
}

void check_kernel_shape(const char* op, const std::optional<Size2d>& kernel_shape,
                        const Tensor& w) {
  if (!kernel_shape) return;
  REFOLD_CHECK(kernel_shape->h == w.size(2) && kernel_shape->w == w.size(3),
               "{}: kernel_shape [{}, {}] does not match W's spatial dims [{}, {}]", op,
               kernel_shape->h, kernel_shape->w, w.size(2), w.size(3));
}

}  // namespace

void check_conv_operands(const char* op, const std::vector<Tensor>& in, std::int64_t rank) {
  REFOLD_CHECK(in.size() == 2 || in.size() == 3, "{}: expects 2 or 3 inputs, got {}", op,
               in.size());
  REFOLD_CHECK(in[0].defined() && in[1].defined(), "{}: X and W are required", op);
  for (std::size_t i = 0; i < 2; ++i) {
    const Tensor& t = in[i];
    const char* name = i == 0 ? "X" : "W";
    REFOLD_CHECK(t.dim() <= 5,
                 "unsupported: {}-d {} ({} is {}-d; refold runs 1-d, 2-d and 3-d {} on 3-d to 5-d "
                 "tensors)",
                 t.dim() - 2, op, name, t.dim(), op);
    REFOLD_CHECK(t.dim() == rank, "{}: {} must be {}-d, got [{}]", op, name, rank,
                 fmt::join(t.sizes(), ", "));
    REFOLD_CHECK(is_floating(t.dtype()), "{}: {} has dtype {}; expected float32 or bfloat16", op,
                 name, dtype_name(t.dtype()));
  }
}

void check_conv_bias(const char* op, const Tensor& bias, std::int64_t out_channels) {
  if (!bias.defined()) return;
  REFOLD_CHECK(bias.dim() == 1 && bias.size(0) == out_channels,
               "{}: bias must be 1-d of length {} (output channels), got [{}]", op, out_channels,
               fmt::join(bias.sizes(), ", "));
}

void check_conv_fits(const char* op, std::int64_t in, std::int64_t k, std::int64_t d,
                     std::int64_t pb, std::int64_t pe) {
  REFOLD_CHECK(in + pb + pe >= d * (k - 1) + 1,
               "{}: output dim <= 0 (in {}, k {}, dilation {}, pads {}/{})", op, in, k, d, pb, pe);
}

void check_constant_weight(const Tensor& w, std::size_t rank, const std::string& op,
                           const std::optional<std::vector<std::int64_t>>& kernel_shape) {
  const auto dims = static_cast<std::int64_t>(rank) + 2;
  REFOLD_CHECK(w.dim() == dims, "{} W must be {}-d for a {}-d {}, got {}-d", op, dims, rank, op,
               w.dim());
  check_floating(w, "W");
  REFOLD_CHECK(w.numel() > 0, "W [{}] is empty", fmt::join(w.sizes(), ", "));
  if (!kernel_shape) return;
  const std::vector<std::int64_t> spatial(w.sizes().begin() + 2, w.sizes().end());
  REFOLD_CHECK(*kernel_shape == spatial, "kernel_shape [{}] does not match W's spatial dims [{}]",
               fmt::join(*kernel_shape, ", "), fmt::join(spatial, ", "));
}

void check_constant_bias(const Tensor& b, std::int64_t m, const Tensor& w) {
  REFOLD_CHECK(b.dim() == 1 && b.size(0) == m,
               "bias B must be 1-d of length {} (output channels), got [{}]", m,
               fmt::join(b.sizes(), ", "));
  REFOLD_CHECK(b.dtype() == w.dtype(), "bias B has dtype {} but W has {}", dtype_name(b.dtype()),
               dtype_name(w.dtype()));
}

std::int64_t read_group(const graph::Node& node) {
  const std::int64_t group = node.attributes.get_int("group", 1);
  REFOLD_CHECK(group > 0, "group must be positive (got {})", group);
  return group;
}

Conv::Conv(const ConvAttributes& attributes, std::shared_ptr<Conv3d> rank_3d)
    : Op("Conv"), attributes_(attributes), rank_3d_(std::move(rank_3d)) {
  REFOLD_CHECK(attributes_.groups > 0, "Conv: group ({}) must be positive", attributes_.groups);
}

std::vector<Tensor> Conv::run(const std::vector<Tensor>& in) {
  if (auto y = run_1d_as_2d(in, [&](const std::vector<Tensor>& lifted) { return run(lifted); }))
    return *y;
  if (rank_3d_ && !in.empty() && in[0].defined() && in[0].dim() == 5) return rank_3d_->run(in);
  const auto& a = attributes_;
  check_conv_operands("Conv", in, 4);
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor bias = in.size() > 2 ? in[2] : Tensor();
  check_kernel_shape("Conv", a.kernel_shape, w);
  // W [M, C/group, kh, kw]
  const std::int64_t m = w.size(0);
  REFOLD_CHECK(m % a.groups == 0, "Conv: group ({}) must divide W's output channels ({})", a.groups,
               m);
  REFOLD_CHECK(w.size(1) * a.groups == x.size(1),
               "Conv: X has {} channels but W [{}] with group {} expects {}", x.size(1),
               fmt::join(w.sizes(), ", "), a.groups, w.size(1) * a.groups);
  check_conv_bias("Conv", bias, m);
  const Pads2d p =
      a.padding.resolve({x.size(2), x.size(3)}, {w.size(2), w.size(3)}, a.stride, a.dilation);
  check_conv_fits("Conv", x.size(2), w.size(2), a.dilation.h, p.top, p.bottom);
  check_conv_fits("Conv", x.size(3), w.size(3), a.dilation.w, p.left, p.right);
  const Conv2dOptions options{a.stride, Padding2d::asymmetric(p.top, p.left, p.bottom, p.right),
                              a.dilation, a.groups};
  return {functional::conv2d(x, w, bias, options)};
}

void conv_transpose_pads(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                         std::int64_t dilation, std::int64_t output_padding, std::int64_t out,
                         bool same_upper, std::int64_t& begin, std::int64_t& end) {
  const std::int64_t full = stride * (in - 1) + output_padding + dilation * (kernel - 1) + 1;
  const std::int64_t total = full - out;
  if (same_upper) {
    begin = floor_half(total);
    end = total - begin;
  } else {
    end = floor_half(total);
    begin = total - end;
  }
}

ConvTranspose::ConvTranspose(const ConvTransposeAttributes& attributes,
                             std::shared_ptr<ConvTranspose3d> rank_3d)
    : Op("ConvTranspose"), attributes_(attributes), rank_3d_(std::move(rank_3d)) {
  REFOLD_CHECK(attributes_.groups > 0, "ConvTranspose: group ({}) must be positive",
               attributes_.groups);
}

std::vector<Tensor> ConvTranspose::run(const std::vector<Tensor>& in) {
  if (auto y = run_1d_as_2d(in, [&](const std::vector<Tensor>& lifted) { return run(lifted); }))
    return *y;
  if (rank_3d_ && !in.empty() && in[0].defined() && in[0].dim() == 5) return rank_3d_->run(in);
  const auto& a = attributes_;
  constexpr const char* op = "ConvTranspose";
  check_conv_operands(op, in, 4);
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor bias = in.size() > 2 ? in[2] : Tensor();
  check_kernel_shape(op, a.kernel_shape, w);
  // W [C, M/group, kh, kw]: C = X's channels, M = W.dim1 · group.
  REFOLD_CHECK(w.size(0) == x.size(1), "{}: X has {} channels but W [{}] expects {}", op, x.size(1),
               fmt::join(w.sizes(), ", "), w.size(0));
  REFOLD_CHECK(w.size(0) % a.groups == 0, "{}: group ({}) must divide the input channels ({})", op,
               a.groups, w.size(0));
  const std::int64_t m = w.size(1) * a.groups;
  check_conv_bias(op, bias, m);
  const std::int64_t kh = w.size(2), kw = w.size(3), ih = x.size(2), iw = x.size(3);
  const Size2d s = a.stride, d = a.dilation, op_pad = a.output_padding;

  // Per-side pads. output_padding extends the end of the full output in every case; with
  // output_shape or SAME the pads are derived from a total that includes it, so
  // out = full + output_padding − (begin + end) is the requested size.
  Pads2d p = a.padding.pads;
  Size2d extra = op_pad;
  const bool same = a.padding.mode == AutoPad::SameUpper || a.padding.mode == AutoPad::SameLower;
  if (a.padding.mode == AutoPad::Valid) p = {};
  if (a.output_shape || same) {
    const Size2d out = a.output_shape ? *a.output_shape : Size2d(ih * s.h, iw * s.w);
    const bool upper = a.padding.mode == AutoPad::SameUpper;
    conv_transpose_pads(ih, kh, s.h, d.h, op_pad.h, out.h, upper, p.top, p.bottom);
    conv_transpose_pads(iw, kw, s.w, d.w, op_pad.w, out.w, upper, p.left, p.right);
    // A consistent output_shape is one a transposed conv can give: at most max(stride,
    // dilation) − 1 beyond the full unpadded output, like output_padding. With total = full −
    // out (full includes output_padding), that is total ≥ output_padding − (max(s, d) − 1).
    const std::int64_t reach_h = std::max(s.h, d.h) - 1, reach_w = std::max(s.w, d.w) - 1;
    REFOLD_CHECK(out.h >= 1 && out.w >= 1 && p.top + p.bottom >= op_pad.h - reach_h &&
                     p.left + p.right >= op_pad.w - reach_w,
                 "{}: output_shape [{}, {}] is inconsistent with input [{}, {}], kernel [{}, {}] "
                 "and strides [{}, {}] (at most [{}, {}])",
                 op, out.h, out.w, ih, iw, kh, kw, s.h, s.w,
                 s.h * (ih - 1) + d.h * (kh - 1) + 1 + reach_h,
                 s.w * (iw - 1) + d.w * (kw - 1) + 1 + reach_w);
  }
  // out = stride·(in − 1) + dilation·(k − 1) + 1 + extra − pad_begin − pad_end ≥ 1
  const std::int64_t oh = s.h * (ih - 1) + d.h * (kh - 1) + 1 + extra.h - p.top - p.bottom;
  const std::int64_t ow = s.w * (iw - 1) + d.w * (kw - 1) + 1 + extra.w - p.left - p.right;
  REFOLD_CHECK(oh >= 1 && ow >= 1, "{}: output dim <= 0 ([{}, {}]; pads [{}, {}, {}, {}])", op, oh,
               ow, p.top, p.left, p.bottom, p.right);

  // PyTorch's form: symmetric, non-negative pads and output_padding below stride or dilation.
  const bool symmetric = p.top == p.bottom && p.left == p.right && p.top >= 0 && p.left >= 0;
  const bool op_ok = (extra.h < s.h || extra.h < d.h) && (extra.w < s.w || extra.w < d.w);
  if (symmetric && op_ok) {
    const ConvTranspose2dOptions o{s, Size2d(p.top, p.left), extra, a.groups, d};
    return {functional::conv_transpose2d(x, w, bias, o)};
  }
  // Otherwise: the full output (no pads), then crop pad_begin rows at the start and
  // pad_end − extra at the end; a negative amount extends with zeros. Bias last, so that the
  // extended rows hold the bias too (as a conv with zero input there would).
  const ConvTranspose2dOptions o{s, Size2d(0, 0), Size2d(0, 0), a.groups, d};
  Tensor full = functional::conv_transpose2d(x, w, Tensor(), o);
  // functional::pad takes (w_begin, w_end, h_begin, h_end); negative values crop.
  Tensor y = functional::pad(full, {-p.left, extra.w - p.right, -p.top, extra.h - p.bottom});
  if (bias.defined()) y = functional::add(y, bias.reshape({1, m, 1, 1}));
  return {y};
}

namespace {

bool symmetric(const Pads2d& p) { return p.top == p.bottom && p.left == p.right; }

std::optional<std::vector<std::int64_t>> kernel_vector(const std::optional<Size2d>& k) {
  if (!k) return std::nullopt;
  return std::vector<std::int64_t>{k->h, k->w};
}

// The spatial rank a Conv / ConvTranspose node describes: its constant W's (W's rank − 2; a W of
// rank below 3 reads as 2, for the 2-d checks to reject), else its window attributes'
// (window_rank), else a ConvTranspose's output_padding or output_shape length (the spatial
// dims, or a whole [N, C, H, W] / [N, C, D, H, W]); 0 when nothing tells (X decides at run
// time).
std::size_t conv_rank(const BuildContext& context, bool transposed) {
  const graph::Node& node = context.node;
  if (is_constant_input(context.graph, node, 1)) {
    const std::int64_t dims = context.graph.constant(node.inputs[1]).dim();
    return dims >= 3 ? static_cast<std::size_t>(dims - 2) : 2;
  }
  if (const std::size_t rank = window_rank(node.attributes); rank != 0) return rank;
  if (!transposed) return 0;
  const graph::Attributes& a = node.attributes;
  if (a.has("output_padding")) return a.get_ints("output_padding").size();
  if (!a.has("output_shape")) return 0;
  const std::size_t n = a.get_ints("output_shape").size();
  return n == 4 ? 2 : n == 5 ? 3 : n;
}

// "unsupported: 4-d Conv" and beyond.
void check_rank(std::size_t rank, const char* op) {
  REFOLD_CHECK(rank <= 3, "unsupported: {}-d {} (refold runs 1-d, 2-d and 3-d {})", rank, op, op);
}

}  // namespace

nn::ModulePtr build_conv(const BuildContext& context) {
  const std::size_t rank = conv_rank(context, false);
  check_rank(rank, "Conv");
  if (rank == 3) return build_conv_3d(context);
  // A 1-d Conv reads its attributes lifted to 2-d and runs as the graph op (Conv::run lifts X
  // and W too).
  const bool one_d = rank == 1;
  const graph::Node lifted = one_d ? lift_1d_window(context.node) : graph::Node{};
  const graph::Node& node = one_d ? lifted : context.node;
  check_arity(node, 2, 3, 1);
  const WindowAttrs window = read_window_attrs(node);
  const std::int64_t group = read_group(node);
  const bool has_bias = !input_name(node, 2).empty();
  const bool w_const = is_constant_input(context.graph, node, 1);
  const bool b_const = !has_bias || is_constant_input(context.graph, node, 2);

  ConvAttributes attrs;
  attrs.kernel_shape = window.kernel_shape;
  attrs.stride = window.strides;
  attrs.dilation = window.dilations;
  attrs.padding = window.padding;
  attrs.groups = group;
  // Rank unknown: a 5-d X runs as the 3-d op of the same (default) attributes.
  if (rank == 0)
    return std::make_shared<Conv>(attrs,
                                  std::make_shared<Conv3d>(read_conv3d_attributes(node, false)));
  if (!w_const || one_d) return std::make_shared<Conv>(attrs);

  // W [M, C/group, kh, kw]
  const Tensor& w = context.graph.constant(node.inputs[1]);
  check_constant_weight(w, 2, "Conv", kernel_vector(window.kernel_shape));
  const std::int64_t m = w.size(0);
  REFOLD_CHECK(m % group == 0, "group ({}) must divide W's output channels ({}, W [{}])", group, m,
               fmt::join(w.sizes(), ", "));
  if (has_bias && b_const) check_constant_bias(context.graph.constant(node.inputs[2]), m, w);
  if (!b_const || !window.padding.is_static(window.strides)) return std::make_shared<Conv>(attrs);

  // Static padding: explicit, VALID, or SAME with stride 1 (then `in` does not matter).
  const Size2d kernel(w.size(2), w.size(3));
  const Pads2d p = window.padding.resolve(kernel, kernel, window.strides, window.dilations);
  const Padding2d padding = symmetric(p) ? Padding2d(p.top, p.left)
                                         : Padding2d::asymmetric(p.top, p.left, p.bottom, p.right);
  nn::Conv2dOptions options(w.size(1) * group, m, kernel);
  options.stride(window.strides)
      .padding(padding)
      .dilation(window.dilations)
      .groups(group)
      .bias(has_bias);
  return std::make_shared<nn::Conv2d>(options, w,
                                      has_bias ? context.graph.constant(node.inputs[2]) : Tensor());
}

nn::ModulePtr build_conv_transpose(const BuildContext& context) {
  const std::size_t rank = conv_rank(context, true);
  check_rank(rank, "ConvTranspose");
  if (rank == 3) return build_conv_transpose_3d(context);
  const bool one_d = rank == 1;  // as build_conv
  const graph::Node lifted = one_d ? lift_1d_window(context.node) : graph::Node{};
  const graph::Node& node = one_d ? lifted : context.node;
  check_arity(node, 2, 3, 1);
  const graph::Attributes& a = node.attributes;
  const WindowAttrs window = read_window_attrs(node);
  const std::int64_t group = read_group(node);

  ConvTransposeAttributes attrs;
  attrs.kernel_shape = window.kernel_shape;
  attrs.stride = window.strides;
  attrs.dilation = window.dilations;
  attrs.padding = window.padding;
  attrs.groups = group;
  const auto op = ints_of_length(a, "output_padding", 2, {0, 0});
  const Size2d s = window.strides, d = window.dilations;
  REFOLD_CHECK(op[0] >= 0 && op[1] >= 0, "output_padding must be non-negative (got [{}])",
               fmt::join(op, ", "));
  // The output size is ambiguous by up to stride − 1; output_padding picks one, so it must stay
  // below the stride (or the dilation), as the spec and PyTorch require (F13).
  REFOLD_CHECK((op[0] < s.h || op[0] < d.h) && (op[1] < s.w || op[1] < d.w),
               "output_padding [{}] must be smaller than strides [{}, {}] (or dilations [{}, {}])",
               fmt::join(op, ", "), s.h, s.w, d.h, d.w);
  attrs.output_padding = Size2d(op[0], op[1]);
  if (a.has("output_shape")) {
    // Spatial dims; a full [N, C, H, W] shape is accepted too (some exporters write it).
    auto shape = a.get_ints("output_shape");
    if (shape.size() == 4) shape.erase(shape.begin(), shape.begin() + 2);
    REFOLD_CHECK(shape.size() == 2, "output_shape must have 2 values, got [{}]",
                 fmt::join(a.get_ints("output_shape"), ", "));
    REFOLD_CHECK(shape[0] > 0 && shape[1] > 0, "output_shape must be positive (got [{}])",
                 fmt::join(shape, ", "));
    attrs.output_shape = Size2d(shape[0], shape[1]);
  }

  const bool has_bias = !input_name(node, 2).empty();
  const bool w_const = is_constant_input(context.graph, node, 1);
  const bool b_const = !has_bias || is_constant_input(context.graph, node, 2);
  if (rank == 0)  // as build_conv
    return std::make_shared<ConvTranspose>(
        attrs, std::make_shared<ConvTranspose3d>(read_conv3d_attributes(node, true)));
  if (!w_const || one_d) return std::make_shared<ConvTranspose>(attrs);

  // W [C, M/group, kh, kw] (F15: not Conv's layout)
  const Tensor& w = context.graph.constant(node.inputs[1]);
  check_constant_weight(w, 2, "ConvTranspose", kernel_vector(window.kernel_shape));
  REFOLD_CHECK(w.size(0) % group == 0, "group ({}) must divide W's input channels ({}, W [{}])",
               group, w.size(0), fmt::join(w.sizes(), ", "));
  const std::int64_t m = w.size(1) * group;
  if (has_bias && b_const) check_constant_bias(context.graph.constant(node.inputs[2]), m, w);

  const auto mode = window.padding.mode;
  const bool plain = mode == AutoPad::NotSet || mode == AutoPad::Valid;
  const Pads2d p = mode == AutoPad::Valid ? Pads2d{} : window.padding.pads;
  if (!b_const || !plain || attrs.output_shape || !symmetric(p))
    return std::make_shared<ConvTranspose>(attrs);

  nn::ConvTranspose2dOptions options(w.size(0), m, Size2d(w.size(2), w.size(3)));
  options.stride(s)
      .padding(Size2d(p.top, p.left))
      .output_padding(attrs.output_padding)
      .groups(group)
      .dilation(d)
      .bias(has_bias);
  return std::make_shared<nn::ConvTranspose2d>(
      options, w, has_bias ? context.graph.constant(node.inputs[2]) : Tensor());
}

const std::vector<OpDef>& conv_ops() {
  static const std::vector<OpDef> table = {
      // The attributes are unchanged since opset 1 (v11 only documents defaults). The layout
      // pass decides a conv's format from its weight, not from this rule.
      {"Conv", 1, build_conv},
      {"ConvTranspose", 1, build_conv_transpose},
  };
  return table;
}

}  // namespace refold::ops
