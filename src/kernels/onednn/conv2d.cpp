// oneDNN conv2d: PyTorch's arguments, validated as the reference validates them, turned into a
// oneDNN problem (see conv_primitive.h).
#include "kernels/onednn/conv2d.h"

#include <cstdint>

#include "core/check.h"
#include "kernels/onednn/conv_primitive.h"
#include "kernels/reference/conv_common.h"

namespace refold::onednn {

namespace ref = reference::detail;

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options, const PostOps& post, std::string* declined) {
  constexpr std::string_view op = "conv2d";
  ref::check_operand(op, "input", input, 4, "[N, C_in, H, W]");
  ref::check_operand(op, "weight", weight, 4, "[C_out, C_in/groups, kh, kw]");
  ref::check_same_dtype(op, "weight", weight, input);
  ref::check_positive(op, "stride", options.stride);
  ref::check_positive(op, "dilation", options.dilation);
  const std::int64_t groups = options.groups;
  REFOLD_CHECK(groups > 0, "{}: groups ({}) must be positive", op, groups);

  const std::int64_t batch = input.size(0), in_channels = input.size(1);
  const std::int64_t in_h = input.size(2), in_w = input.size(3);
  const std::int64_t out_channels = weight.size(0), kh = weight.size(2), kw = weight.size(3);
  REFOLD_CHECK(in_channels % groups == 0, "{}: groups ({}) must divide in_channels ({})", op,
               groups, in_channels);
  REFOLD_CHECK(out_channels % groups == 0, "{}: groups ({}) must divide out_channels ({})", op,
               groups, out_channels);
  REFOLD_CHECK(weight.size(1) * groups == in_channels,
               "{}: input has {} channels, weight expects {} (groups {}, weight {})", op,
               in_channels, weight.size(1) * groups, groups, weight.description());
  ref::check_bias(op, bias, out_channels, input);
  REFOLD_CHECK(options.padding.mode() != Padding2d::Mode::Same ||
                   (options.stride.h == 1 && options.stride.w == 1),
               "{}: padding 'same' requires stride 1, got stride ({}, {})", op, options.stride.h,
               options.stride.w);
  const Pads2d pads = ref::with_context(op, "", [&] {
    return options.padding.resolve({kh, kw}, options.dilation);
  });
  const Size2d s = options.stride, d = options.dilation;
  const std::int64_t out_h = ref::with_context(
      op, "height", [&] { return conv_output_size(in_h, kh, s.h, pads.top, pads.bottom, d.h); });
  const std::int64_t out_w = ref::with_context(
      op, "width", [&] { return conv_output_size(in_w, kw, s.w, pads.left, pads.right, d.w); });
  check_post_ops(op, post, {batch, out_channels, out_h, out_w}, input.dtype());

  detail::ConvProblem p;
  p.op = op;
  p.src_dims = {batch, in_channels, in_h, in_w};
  p.dst_dims = {batch, out_channels, out_h, out_w};
  p.groups = groups;
  // Grouped weights are {G, O/G, I/G, kh, kw} in oneDNN; groups 1 keeps the plain 4-d form,
  // which is what oneDNN's fastest non-grouped kernels are registered for.
  p.weight_dims = groups == 1 ? Shape{out_channels, in_channels, kh, kw}
                              : Shape{groups, out_channels / groups, in_channels / groups, kh, kw};
  p.strides = {s.h, s.w};
  p.dilates = {d.h - 1, d.w - 1};
  p.pad_l = {pads.top, pads.left};
  p.pad_r = {pads.bottom, pads.right};
  return detail::run_conv(p, input, weight, bias, post, declined);
}

}  // namespace refold::onednn
