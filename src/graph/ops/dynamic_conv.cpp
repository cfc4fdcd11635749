#include "refold/graph/ops/dynamic_conv.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "core/check.h"
#include "refold/functional.h"

namespace refold::graph::ops {
namespace {

// ⌊x / 2⌋ for any sign (Python's //, which the ONNX reference uses).
std::int64_t floor_half(std::int64_t x) { return x >= 0 ? x / 2 : -((-x + 1) / 2); }

// The checks shared by both ops: 4-d floating X and W, optional 1-d bias of `out_channels`.
void check_operands(const char* op, const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 2 || in.size() == 3, "{}: expects 2 or 3 inputs, got {}", op,
               in.size());
  REFOLD_CHECK(in[0].defined() && in[1].defined(), "{}: X and W are required", op);
  for (std::size_t i = 0; i < 2; ++i) {
    const Tensor& t = in[i];
    const char* name = i == 0 ? "X" : "W";
    REFOLD_CHECK(t.dim() != 3 && t.dim() != 5,
                 "unsupported: {}-d {} ({} is {}-d; refold runs 2-d {} on 4-d tensors)",
                 t.dim() - 2, op, name, t.dim(), op);
    REFOLD_CHECK(t.dim() == 4, "{}: {} must be 4-d, got [{}]", op, name,
                 fmt::join(t.sizes(), ", "));
    REFOLD_CHECK(is_floating(t.dtype()), "{}: {} has dtype {}; expected float32 or bfloat16", op,
                 name, dtype_name(t.dtype()));
  }
}

void check_bias(const char* op, const Tensor& bias, std::int64_t out_channels) {
  if (!bias.defined()) return;
  REFOLD_CHECK(bias.dim() == 1 && bias.size(0) == out_channels,
               "{}: bias must be 1-d of length {} (output channels), got [{}]", op, out_channels,
               fmt::join(bias.sizes(), ", "));
}

void check_kernel_shape(const char* op, const std::optional<Size2d>& kernel_shape,
                        const Tensor& w) {
  if (!kernel_shape) return;
  REFOLD_CHECK(kernel_shape->h == w.size(2) && kernel_shape->w == w.size(3),
               "{}: kernel_shape [{}, {}] does not match W's spatial dims [{}, {}]", op,
               kernel_shape->h, kernel_shape->w, w.size(2), w.size(3));
}

// in + pad_begin + pad_end must hold one dilated kernel (docs/reliability.md F9).
void check_fits(const char* op, std::int64_t in, std::int64_t k, std::int64_t d, std::int64_t pb,
                std::int64_t pe) {
  REFOLD_CHECK(in + pb + pe >= d * (k - 1) + 1,
               "{}: output dim <= 0 (in {}, k {}, dilation {}, pads {}/{})", op, in, k, d, pb, pe);
}

}  // namespace

Conv::Conv(const ConvAttributes& attributes) : Op("Conv"), attributes_(attributes) {
  REFOLD_CHECK(attributes_.groups > 0, "Conv: group ({}) must be positive", attributes_.groups);
}

std::vector<Tensor> Conv::run(const std::vector<Tensor>& in) {
  const auto& a = attributes_;
  check_operands("Conv", in);
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
  check_bias("Conv", bias, m);
  const Pads2d p =
      a.padding.resolve({x.size(2), x.size(3)}, {w.size(2), w.size(3)}, a.stride, a.dilation);
  check_fits("Conv", x.size(2), w.size(2), a.dilation.h, p.top, p.bottom);
  check_fits("Conv", x.size(3), w.size(3), a.dilation.w, p.left, p.right);
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

ConvTranspose::ConvTranspose(const ConvTransposeAttributes& attributes)
    : Op("ConvTranspose"), attributes_(attributes) {
  REFOLD_CHECK(attributes_.groups > 0, "ConvTranspose: group ({}) must be positive",
               attributes_.groups);
}

std::vector<Tensor> ConvTranspose::run(const std::vector<Tensor>& in) {
  const auto& a = attributes_;
  constexpr const char* op = "ConvTranspose";
  check_operands(op, in);
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
  check_bias(op, bias, m);
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

}  // namespace refold::graph::ops
