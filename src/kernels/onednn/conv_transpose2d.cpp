// oneDNN conv_transpose2d (deconvolution_forward): PyTorch's arguments, validated as the
// reference validates them, turned into a oneDNN problem (see conv_primitive.h).
#include <cstdint>

#include "core/check.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/conv_primitive.h"
#include "kernels/reference/conv_common.h"

namespace refold::onednn {

namespace ref = reference::detail;

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& options, const PostOps& post,
                        std::string* declined) {
  constexpr std::string_view op = "conv_transpose2d";
  ref::check_operand(op, "input", input, 4, "[N, C_in, H, W]");
  ref::check_operand(op, "weight", weight, 4, "[C_in, C_out/groups, kh, kw]");
  ref::check_same_dtype(op, "weight", weight, input);
  ref::check_positive(op, "stride", options.stride);
  ref::check_positive(op, "dilation", options.dilation);
  REFOLD_CHECK(options.padding.h >= 0 && options.padding.w >= 0,
               "{}: padding ({}, {}) must be non-negative", op, options.padding.h,
               options.padding.w);
  const std::int64_t groups = options.groups;
  REFOLD_CHECK(groups > 0, "{}: groups ({}) must be positive", op, groups);

  const std::int64_t batch = input.size(0), in_channels = input.size(1);
  const std::int64_t in_h = input.size(2), in_w = input.size(3);
  const std::int64_t kh = weight.size(2), kw = weight.size(3);
  REFOLD_CHECK(in_channels % groups == 0, "{}: groups ({}) must divide in_channels ({})", op,
               groups, in_channels);
  REFOLD_CHECK(weight.size(0) == in_channels,
               "{}: input has {} channels, weight expects {} (weight {} is [C_in, "
               "C_out/groups, kh, kw])",
               op, in_channels, weight.size(0), weight.description());
  const std::int64_t group_out = weight.size(1);
  const std::int64_t out_channels = group_out * groups;
  ref::check_bias(op, bias, out_channels, input);

  const Size2d s = options.stride, pad = options.padding, d = options.dilation;
  const Size2d out_pad = options.output_padding;
  const std::int64_t out_h = ref::with_context(op, "height", [&] {
    return conv_transpose_output_size(in_h, kh, s.h, pad.h, out_pad.h, d.h);
  });
  const std::int64_t out_w = ref::with_context(op, "width", [&] {
    return conv_transpose_output_size(in_w, kw, s.w, pad.w, out_pad.w, d.w);
  });
  check_post_ops(op, post, {batch, out_channels, out_h, out_w}, input.dtype());

  detail::ConvProblem p;
  p.op = op;
  p.transposed = true;
  p.src_dims = {batch, in_channels, in_h, in_w};
  p.dst_dims = {batch, out_channels, out_h, out_w};
  p.groups = groups;
  // oneDNN's deconvolution weights are {O, I, kh, kw} / {G, O/G, I/G, kh, kw} with O its output
  // channels; PyTorch stores them [I, O/G, kh, kw] — conv_primitive maps the strides (iohw).
  p.weight_dims = groups == 1 ? Shape{out_channels, in_channels, kh, kw}
                              : Shape{groups, group_out, in_channels / groups, kh, kw};
  p.strides = {s.h, s.w};
  p.dilates = {d.h - 1, d.w - 1};
  // oneDNN takes the output size as given and requires
  //   out = (in − 1)·s − pad_l − pad_r + d·(k − 1) + 1
  // PyTorch's out = (in − 1)·s − 2·pad + d·(k − 1) + output_padding + 1, so pad_l = pad and
  // pad_r = pad − output_padding: the extra output_padding rows/columns at the bottom/right are
  // a negative right padding (they still receive the kernel taps that reach them).
  p.pad_l = {pad.h, pad.w};
  p.pad_r = {pad.h - out_pad.h, pad.w - out_pad.w};
  return detail::run_conv(p, input, weight, bias, post, declined);
}

}  // namespace refold::onednn
