// 3-d Conv and ConvTranspose (X [N, C, D, H, W]): the builders, which validate every attribute
// and a constant W or B, and the graph ops, which resolve the padding per call and run
// reference::conv_nd / conv_transpose_nd with oneDNN's 3-d primitives as the fast path
// (kernels/dispatch.h: REFOLD_VERBOSE=1 logs "conv3d" and "conv_transpose3d"). 5-d tensors stay
// contiguous: the layout pass, bn-folding and reparameterize take nn::Conv2d modules only.
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/onednn/conv_nd.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/conv.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/functional.h"

namespace refold::ops {
namespace {

constexpr std::size_t kRank = 3;

std::vector<std::int64_t> spatial_sizes(const Tensor& t) {
  return {t.sizes().begin() + 2, t.sizes().end()};
}

void check_kernel_shape_3d(const char* op, const Conv3dAttributes& a, const Tensor& w) {
  if (!a.window.kernel_shape) return;
  REFOLD_CHECK(*a.window.kernel_shape == spatial_sizes(w),
               "{}: kernel_shape [{}] does not match W's spatial dims [{}]", op,
               fmt::join(*a.window.kernel_shape, ", "), fmt::join(spatial_sizes(w), ", "));
}

}  // namespace

Conv3dAttributes read_conv3d_attributes(const graph::Node& node, bool transposed) {
  const graph::Attributes& a = node.attributes;
  Conv3dAttributes attrs;
  attrs.window = read_window_nd(node, kRank);
  attrs.groups = read_group(node);
  if (!transposed) return attrs;
  const std::vector<std::int64_t>& s = attrs.window.strides;
  const std::vector<std::int64_t>& d = attrs.window.dilations;
  const auto op = ints_of_length(a, "output_padding", kRank, {0, 0, 0});
  REFOLD_CHECK(std::all_of(op.begin(), op.end(), [](auto v) { return v >= 0; }),
               "output_padding must be non-negative (got [{}])", fmt::join(op, ", "));
  // As in 2-d (F13): output_padding picks one of the stride − 1 ambiguous output sizes.
  for (std::size_t k = 0; k < kRank; ++k)
    REFOLD_CHECK(op[k] < s[k] || op[k] < d[k],
                 "output_padding [{}] must be smaller than strides [{}] (or dilations [{}])",
                 fmt::join(op, ", "), fmt::join(s, ", "), fmt::join(d, ", "));
  attrs.output_padding = op;
  if (a.has("output_shape")) {
    // Spatial dims; a full [N, C, D, H, W] shape is accepted too (as in 2-d).
    auto shape = a.get_ints("output_shape");
    if (shape.size() == kRank + 2) shape.erase(shape.begin(), shape.begin() + 2);
    REFOLD_CHECK(shape.size() == kRank, "output_shape must have 3 values, got [{}]",
                 fmt::join(a.get_ints("output_shape"), ", "));
    REFOLD_CHECK(std::all_of(shape.begin(), shape.end(), [](auto v) { return v > 0; }),
                 "output_shape must be positive (got [{}])", fmt::join(shape, ", "));
    attrs.output_shape = shape;
  }
  return attrs;
}

nn::ModulePtr build_conv_3d(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 1);
  const Conv3dAttributes attrs = read_conv3d_attributes(node, false);
  if (is_constant_input(context.graph, node, 1)) {
    // W [M, C/group, kd, kh, kw]
    const Tensor& w = context.graph.constant(node.inputs[1]);
    check_constant_weight(w, kRank, "Conv", attrs.window.kernel_shape);
    const std::int64_t m = w.size(0);
    REFOLD_CHECK(m % attrs.groups == 0, "group ({}) must divide W's output channels ({}, W [{}])",
                 attrs.groups, m, fmt::join(w.sizes(), ", "));
    if (!input_name(node, 2).empty() && is_constant_input(context.graph, node, 2))
      check_constant_bias(context.graph.constant(node.inputs[2]), m, w);
  }
  return std::make_shared<Conv3d>(attrs);
}

nn::ModulePtr build_conv_transpose_3d(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 1);
  const Conv3dAttributes attrs = read_conv3d_attributes(node, true);
  if (is_constant_input(context.graph, node, 1)) {
    // W [C, M/group, kd, kh, kw] (F15: not Conv's layout)
    const Tensor& w = context.graph.constant(node.inputs[1]);
    check_constant_weight(w, kRank, "ConvTranspose", attrs.window.kernel_shape);
    REFOLD_CHECK(w.size(0) % attrs.groups == 0,
                 "group ({}) must divide W's input channels ({}, W [{}])", attrs.groups, w.size(0),
                 fmt::join(w.sizes(), ", "));
    if (!input_name(node, 2).empty() && is_constant_input(context.graph, node, 2))
      check_constant_bias(context.graph.constant(node.inputs[2]), w.size(1) * attrs.groups, w);
  }
  return std::make_shared<ConvTranspose3d>(attrs);
}

namespace {

// A 3-d conv whose kernel is 1 along one spatial axis, with stride 1 and no padding there, is a
// 2-d conv of every slice along that axis: with the axis k folded into the batch,
//   y[n, m, …, v_k, …] = Σ_c Σ_{i,j} W[m, c, i, j] x[n, c, …, v_k, …]   (the other two axes i, j)
// so x is laid out [N·D_k, C, A, B] (channels_last: one transpose), functional::conv2d runs it,
// and the result goes back to [N, M, …]. Lambda networks' position lambdas are such a conv
// (1 → 16 channels, kernel 9 × 9 × 1): oneDNN's 3-d conv ran them as im2col + GEMM at
// 32 GFLOP/s, 4 of lambda-ResNet-26t's 25 ms. Declines every other conv3d.
Tensor conv3d_as_conv2d(const Tensor& x, const Tensor& w, const Tensor& bias,
                        const reference::ConvNdParams& p, std::string* declined) {
  std::optional<std::int64_t> folded;
  for (std::int64_t k = 0; k < 3 && !folded; ++k) {
    const auto i = static_cast<std::size_t>(k);
    if (w.size(k + 2) == 1 && p.stride[i] == 1 && p.pad_begin[i] == 0 && p.pad_end[i] == 0)
      folded = k;
  }
  if (!folded) {
    *declined = "no spatial axis with kernel 1, stride 1 and no padding";
    return {};
  }
  if (x.dtype() != DType::Float32) {
    *declined = "float32 only";
    return {};
  }
  const std::int64_t k = *folded;
  Shape kept;  // the two other spatial axes, in order
  for (std::int64_t j = 0; j < 3; ++j)
    if (j != k) kept.push_back(j);
  const auto a = static_cast<std::size_t>(kept[0]), b = static_cast<std::size_t>(kept[1]);
  const std::int64_t n = x.size(0), c = x.size(1), depth = x.size(2 + k);
  // [N, D_k, A, B, C] dense, read as the channels_last [N·D_k, C, A, B].
  const Tensor slices = x.permute({0, 2 + k, 2 + kept[0], 2 + kept[1], 1})
                            .contiguous()
                            .view({n * depth, x.size(2 + kept[0]), x.size(2 + kept[1]), c})
                            .permute({0, 3, 1, 2});
  Shape w2_sizes = {w.size(0), w.size(1), w.size(2 + kept[0]), w.size(2 + kept[1])};
  Conv2dOptions options;
  options.stride = {p.stride[a], p.stride[b]};
  options.dilation = {p.dilation[a], p.dilation[b]};
  options.padding =
      Padding2d::asymmetric(p.pad_begin[a], p.pad_begin[b], p.pad_end[a], p.pad_end[b]);
  options.groups = p.groups;
  const Tensor y = functional::conv2d(slices, w.contiguous().view(w2_sizes), bias, options);
  // [N·D_k, M, A', B'] → [N, D_k, M, A', B'] → D_k back in its place among the spatial axes.
  const Tensor unfolded = y.contiguous().view({n, depth, y.size(1), y.size(2), y.size(3)});
  Shape order = {0, 2};
  for (std::int64_t j = 0, next = 3; j < 3; ++j) order.push_back(j == k ? 1 : next++);
  return unfolded.permute(order).contiguous();
}

}  // namespace

Conv3d::Conv3d(const Conv3dAttributes& attributes) : Op("Conv"), attributes_(attributes) {
  REFOLD_CHECK(attributes_.groups > 0, "Conv: group ({}) must be positive", attributes_.groups);
}

std::vector<Tensor> Conv3d::run(const std::vector<Tensor>& in) {
  constexpr const char* op = "Conv";
  const Conv3dAttributes& a = attributes_;
  check_conv_operands(op, in, kRank + 2);
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor bias = in.size() > 2 ? in[2] : Tensor();
  check_kernel_shape_3d(op, a, w);
  // W [M, C/group, kd, kh, kw]
  const std::int64_t m = w.size(0);
  REFOLD_CHECK(m % a.groups == 0, "{}: group ({}) must divide W's output channels ({})", op,
               a.groups, m);
  REFOLD_CHECK(w.size(1) * a.groups == x.size(1),
               "{}: X has {} channels but W [{}] with group {} expects {}", op, x.size(1),
               fmt::join(w.sizes(), ", "), a.groups, w.size(1) * a.groups);
  check_conv_bias(op, bias, m);
  reference::ConvNdParams p;
  p.stride = a.window.strides;
  p.dilation = a.window.dilations;
  p.groups = a.groups;
  a.window.resolve(spatial_sizes(x), spatial_sizes(w), p.pad_begin, p.pad_end);
  for (std::size_t k = 0; k < kRank; ++k)
    check_conv_fits(op, x.size(k + 2), w.size(k + 2), p.dilation[k], p.pad_begin[k], p.pad_end[k]);
  return {
      dispatch("conv3d",
               {{"conv2d over a folded axis",
                 [&](std::string* declined) { return conv3d_as_conv2d(x, w, bias, p, declined); }},
                {"onednn",
                 [&](std::string* declined) {
                   return onednn::conv_nd(x.contiguous(), w, bias, p, declined);  // oneDNN's ncdhw
                 }}},
               [&] { return reference::conv_nd(x, w, bias, p); })};
}

ConvTranspose3d::ConvTranspose3d(const Conv3dAttributes& attributes)
    : Op("ConvTranspose"), attributes_(attributes) {
  REFOLD_CHECK(attributes_.groups > 0, "ConvTranspose: group ({}) must be positive",
               attributes_.groups);
}

std::vector<Tensor> ConvTranspose3d::run(const std::vector<Tensor>& in) {
  constexpr const char* op = "ConvTranspose";
  const Conv3dAttributes& a = attributes_;
  check_conv_operands(op, in, kRank + 2);
  const Tensor& x = in[0];
  const Tensor& w = in[1];
  const Tensor bias = in.size() > 2 ? in[2] : Tensor();
  check_kernel_shape_3d(op, a, w);
  // W [C, M/group, kd, kh, kw]: C = X's channels, M = W.dim1 · group.
  REFOLD_CHECK(w.size(0) == x.size(1), "{}: X has {} channels but W [{}] expects {}", op, x.size(1),
               fmt::join(w.sizes(), ", "), w.size(0));
  REFOLD_CHECK(w.size(0) % a.groups == 0, "{}: group ({}) must divide the input channels ({})", op,
               a.groups, w.size(0));
  check_conv_bias(op, bias, w.size(1) * a.groups);

  // Per-side pads, as in 2-d (ConvTranspose::run): explicit, none (VALID), or derived from
  // output_shape or SAME (out = in·stride) by conv_transpose_pads, where output_padding is part
  // of the full output; then per axis
  //   out = stride·(in − 1) + dilation·(k − 1) + 1 + output_padding − pad_begin − pad_end.
  const std::vector<std::int64_t>& s = a.window.strides;
  const std::vector<std::int64_t>& d = a.window.dilations;
  const std::vector<std::int64_t> in_size = spatial_sizes(x), k = spatial_sizes(w);
  reference::ConvNdParams p;
  p.stride = s;
  p.dilation = d;
  p.groups = a.groups;
  p.output_padding = a.output_padding;
  p.pad_begin.assign(kRank, 0);
  p.pad_end.assign(kRank, 0);
  const AutoPad mode = a.window.mode;
  const bool same = mode == AutoPad::SameUpper || mode == AutoPad::SameLower;
  if (a.output_shape || same) {
    std::vector<std::int64_t> out(kRank), most(kRank);
    bool consistent = true;
    for (std::size_t i = 0; i < kRank; ++i) {
      out[i] = a.output_shape ? (*a.output_shape)[i] : in_size[i] * s[i];
      conv_transpose_pads(in_size[i], k[i], s[i], d[i], p.output_padding[i], out[i],
                          mode == AutoPad::SameUpper, p.pad_begin[i], p.pad_end[i]);
      // At most max(stride, dilation) − 1 beyond the full unpadded output (as in 2-d).
      const std::int64_t reach = std::max(s[i], d[i]) - 1;
      most[i] = s[i] * (in_size[i] - 1) + d[i] * (k[i] - 1) + 1 + reach;
      consistent =
          consistent && out[i] >= 1 && p.pad_begin[i] + p.pad_end[i] >= p.output_padding[i] - reach;
    }
    REFOLD_CHECK(consistent,
                 "{}: output_shape [{}] is inconsistent with input [{}], kernel [{}] and strides "
                 "[{}] (at most [{}])",
                 op, fmt::join(out, ", "), fmt::join(in_size, ", "), fmt::join(k, ", "),
                 fmt::join(s, ", "), fmt::join(most, ", "));
  } else if (mode == AutoPad::NotSet) {
    p.pad_begin.assign(a.window.pads.begin(), a.window.pads.begin() + kRank);
    p.pad_end.assign(a.window.pads.begin() + kRank, a.window.pads.end());
  }
  for (std::size_t i = 0; i < kRank; ++i) {
    const std::int64_t out = s[i] * (in_size[i] - 1) + d[i] * (k[i] - 1) + 1 + p.output_padding[i] -
                             p.pad_begin[i] - p.pad_end[i];
    REFOLD_CHECK(out >= 1, "{}: output dim <= 0 (axis {}: {}; pads [{}] / [{}])", op, i, out,
                 fmt::join(p.pad_begin, ", "), fmt::join(p.pad_end, ", "));
  }
  const Tensor src = x.contiguous();  // oneDNN's 5-d format (ncdhw)
  return {dispatch("conv_transpose3d",
                   {{"onednn",
                     [&](std::string* declined) {
                       return onednn::conv_transpose_nd(src, w, bias, p, declined);
                     }}},
                   [&] { return reference::conv_transpose_nd(x, w, bias, p); })};
}

}  // namespace refold::ops
