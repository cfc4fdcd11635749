// Conv and ConvTranspose: nn::Conv2d / nn::ConvTranspose2d over the graph's constant weights
// when the padding is known at build time, else graph::ops::Conv / ConvTranspose.
#include <fmt/ranges.h>

#include "core/check.h"
#include "onnx/ops/cnn_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/dynamic_conv.h"
#include "refold/nn/conv.h"

namespace refold::onnx::ops {
namespace {

// The checks a constant W allows before any input is seen: 4-d, floating, non-empty,
// kernel_shape equal to W's spatial dims (F10).
void check_constant_weight(const Tensor& w, const std::string& op,
                           const std::optional<Size2d>& kernel_shape) {
  check_2d(w.dim(), op, "W");
  check_floating(w, "W");
  REFOLD_CHECK(w.numel() > 0, "W [{}] is empty", fmt::join(w.sizes(), ", "));
  if (kernel_shape)
    REFOLD_CHECK(kernel_shape->h == w.size(2) && kernel_shape->w == w.size(3),
                 "kernel_shape [{}, {}] does not match W's spatial dims [{}, {}]", kernel_shape->h,
                 kernel_shape->w, w.size(2), w.size(3));
}

// A constant bias: 1-d of `m` values with W's dtype (F12).
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

bool symmetric(const Pads2d& p) { return p.top == p.bottom && p.left == p.right; }

}  // namespace

nn::ModulePtr build_conv(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 1);
  const WindowAttrs window = read_window_attrs(node, "Conv");
  const std::int64_t group = read_group(node);
  const bool has_bias = !input_name(node, 2).empty();
  const bool w_const = is_constant_input(context.graph, node, 1);
  const bool b_const = !has_bias || is_constant_input(context.graph, node, 2);

  graph::ops::ConvAttributes attrs;
  attrs.kernel_shape = window.kernel_shape;
  attrs.stride = window.strides;
  attrs.dilation = window.dilations;
  attrs.padding = window.padding;
  attrs.groups = group;
  if (!w_const) return std::make_shared<graph::ops::Conv>(attrs);

  // W [M, C/group, kh, kw]
  const Tensor& w = context.graph.constant(node.inputs[1]);
  check_constant_weight(w, "Conv", window.kernel_shape);
  const std::int64_t m = w.size(0);
  REFOLD_CHECK(m % group == 0, "group ({}) must divide W's output channels ({}, W [{}])", group, m,
               fmt::join(w.sizes(), ", "));
  if (has_bias && b_const) check_constant_bias(context.graph.constant(node.inputs[2]), m, w);
  if (!b_const || !window.padding.is_static(window.strides))
    return std::make_shared<graph::ops::Conv>(attrs);

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
  auto conv = make_module_keeping_rng<nn::Conv2d>(options);
  share(conv->weight(), w);
  if (has_bias) share(conv->bias(), context.graph.constant(node.inputs[2]));
  return conv;
}

nn::ModulePtr build_conv_transpose(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 1);
  const graph::Attributes& a = node.attributes;
  const WindowAttrs window = read_window_attrs(node, "ConvTranspose");
  const std::int64_t group = read_group(node);

  graph::ops::ConvTransposeAttributes attrs;
  attrs.kernel_shape = window.kernel_shape;
  attrs.stride = window.strides;
  attrs.dilation = window.dilations;
  attrs.padding = window.padding;
  attrs.groups = group;
  const auto op = ints_of_length(a, "output_padding", 2, "ConvTranspose", {0, 0});
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
  if (!w_const) return std::make_shared<graph::ops::ConvTranspose>(attrs);

  // W [C, M/group, kh, kw] (F15: not Conv's layout)
  const Tensor& w = context.graph.constant(node.inputs[1]);
  check_constant_weight(w, "ConvTranspose", window.kernel_shape);
  REFOLD_CHECK(w.size(0) % group == 0, "group ({}) must divide W's input channels ({}, W [{}])",
               group, w.size(0), fmt::join(w.sizes(), ", "));
  const std::int64_t m = w.size(1) * group;
  if (has_bias && b_const) check_constant_bias(context.graph.constant(node.inputs[2]), m, w);

  const auto mode = window.padding.mode;
  const bool plain = mode == graph::ops::AutoPad::NotSet || mode == graph::ops::AutoPad::Valid;
  const Pads2d p = mode == graph::ops::AutoPad::Valid ? Pads2d{} : window.padding.pads;
  if (!b_const || !plain || attrs.output_shape || !symmetric(p))
    return std::make_shared<graph::ops::ConvTranspose>(attrs);

  nn::ConvTranspose2dOptions options(w.size(0), m, Size2d(w.size(2), w.size(3)));
  options.stride(s)
      .padding(Size2d(p.top, p.left))
      .output_padding(attrs.output_padding)
      .groups(group)
      .dilation(d)
      .bias(has_bias);
  auto up = make_module_keeping_rng<nn::ConvTranspose2d>(options);
  share(up->weight(), w);
  if (has_bias) share(up->bias(), context.graph.constant(node.inputs[2]));
  return up;
}

}  // namespace refold::onnx::ops
