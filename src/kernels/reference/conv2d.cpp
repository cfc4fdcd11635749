// Reference conv2d (torch.nn.functional.conv2d): direct loops over logical indices, any strides,
// accumulation in double, one rounding to the output dtype.
#include <cstdint>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/conv_common.h"
#include "refold/reference.h"

namespace refold::reference {

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  constexpr std::string_view op = "conv2d";
  detail::check_operand(op, "input", input, 4, "[N, C_in, H, W]");
  detail::check_operand(op, "weight", weight, 4, "[C_out, C_in/groups, kh, kw]");
  detail::check_same_dtype(op, "weight", weight, input);
  detail::check_positive(op, "stride", options.stride);
  detail::check_positive(op, "dilation", options.dilation);
  const std::int64_t groups = options.groups;
  REFOLD_CHECK(groups > 0, "{}: groups ({}) must be positive", op, groups);

  const std::int64_t batch = input.size(0), in_channels = input.size(1);
  const std::int64_t in_h = input.size(2), in_w = input.size(3);
  const std::int64_t out_channels = weight.size(0), kh = weight.size(2), kw = weight.size(3);
  REFOLD_CHECK(in_channels % groups == 0, "{}: groups ({}) must divide in_channels ({})", op,
               groups, in_channels);
  REFOLD_CHECK(out_channels % groups == 0, "{}: groups ({}) must divide out_channels ({})", op,
               groups, out_channels);
  // weight is [C_out, C_in/groups, kh, kw]: each output channel sees its group's inputs only.
  REFOLD_CHECK(weight.size(1) * groups == in_channels,
               "{}: input has {} channels, weight expects {} (groups {}, weight {})", op,
               in_channels, weight.size(1) * groups, groups, weight.description());
  detail::check_bias(op, bias, out_channels, input);

  // PyTorch rejects 'same' with stride > 1: the output could not keep the input's size.
  REFOLD_CHECK(options.padding.mode() != Padding2d::Mode::Same ||
                   (options.stride.h == 1 && options.stride.w == 1),
               "{}: padding 'same' requires stride 1, got stride ({}, {})", op, options.stride.h,
               options.stride.w);
  const Pads2d pads = detail::with_context(op, "", [&] {
    return options.padding.resolve({kh, kw}, options.dilation);
  });
  const std::int64_t sh = options.stride.h, sw = options.stride.w;
  const std::int64_t dh = options.dilation.h, dw = options.dilation.w;
  const std::int64_t out_h = detail::with_context(
      op, "height", [&] { return conv_output_size(in_h, kh, sh, pads.top, pads.bottom, dh); });
  const std::int64_t out_w = detail::with_context(
      op, "width", [&] { return conv_output_size(in_w, kw, sw, pads.left, pads.right, dw); });

  Tensor output = empty({batch, out_channels, out_h, out_w},
                        {input.dtype(), detail::conv_output_format(input, weight)});

  const FloatReader in(input), w(weight);
  const std::int64_t in_sn = in.stride(0), in_sc = in.stride(1), in_sh = in.stride(2),
                     in_sw = in.stride(3);
  const std::int64_t w_so = w.stride(0), w_sc = w.stride(1), w_sh = w.stride(2), w_sw = w.stride(3);
  const std::int64_t o_sn = output.stride(0), o_sc = output.stride(1), o_sh = output.stride(2),
                     o_sw = output.stride(3);
  void* out_base = output.data_ptr();
  const DType out_dtype = output.dtype();
  const std::int64_t group_in = in_channels / groups;    // Cg: input channels per group
  const std::int64_t group_out = out_channels / groups;  // output channels per group

  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t oc = 0; oc < out_channels; ++oc) {
      const std::int64_t g = oc / group_out;  // output channel oc belongs to group g
      const double b = bias.defined() ? bias.at({oc}) : 0.0;
      for (std::int64_t y = 0; y < out_h; ++y) {
        for (std::int64_t x = 0; x < out_w; ++x) {
          // out[n,oc,y,x] = bias[oc] + sum_{c<Cg, i<kh, j<kw}
          //     in[n, g·Cg + c, y·sh − pad_top + i·dh, x·sw − pad_left + j·dw] · w[oc, c, i, j]
          // where input positions outside [0,H)×[0,W) read as zero (the padding).
          double acc = b;
          for (std::int64_t c = 0; c < group_in; ++c) {
            const std::int64_t in_c = in_sn * n + in_sc * (g * group_in + c);
            const std::int64_t w_c = w_so * oc + w_sc * c;
            for (std::int64_t i = 0; i < kh; ++i) {
              const std::int64_t iy = y * sh - pads.top + i * dh;
              if (iy < 0 || iy >= in_h) continue;
              for (std::int64_t j = 0; j < kw; ++j) {
                const std::int64_t ix = x * sw - pads.left + j * dw;
                if (ix < 0 || ix >= in_w) continue;
                acc += static_cast<double>(in.at_offset(in_c + in_sh * iy + in_sw * ix)) *
                       static_cast<double>(w.at_offset(w_c + w_sh * i + w_sw * j));
              }
            }
          }
          // One rounding from double to the output dtype (round_to_dtype).
          store_from_float(out_base, out_dtype, o_sn * n + o_sc * oc + o_sh * y + o_sw * x,
                           round_to_dtype(acc, out_dtype));
        }
      }
    }
  }
  return output;
}

}  // namespace refold::reference
