// Reference conv2d (torch.nn.functional.conv2d): direct loops over logical indices, any strides,
// accumulation in double, one rounding to the output dtype.
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/conv_common.h"
#include "refold/reference.h"

namespace refold::reference {

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  constexpr std::string_view op = "conv2d";
  detail::check_conv_operands(op, input, weight, "[C_out, C_in/groups, kh, kw]", options.stride,
                              options.dilation);
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
  const detail::Strides4 is = detail::strides4(in.strides()), ws = detail::strides4(w.strides());
  const std::vector<float> b = detail::bias_values(bias, out_channels);
  const std::int64_t group_in = in_channels / groups;    // Cg: input channels per group
  const std::int64_t group_out = out_channels / groups;  // output channels per group

  detail::fill_output(output, [&](std::int64_t n, std::int64_t oc, std::int64_t y, std::int64_t x) {
    // out[n,oc,y,x] = bias[oc] + sum_{c<Cg, i<kh, j<kw}
    //     in[n, g·Cg + c, y·sh − pad_top + i·dh, x·sw − pad_left + j·dw] · w[oc, c, i, j]
    // where g = oc / (C_out/groups) is oc's group and input positions outside [0,H)×[0,W) read
    // as zero (the padding).
    const std::int64_t g = oc / group_out;
    double acc = b[static_cast<std::size_t>(oc)];
    for (std::int64_t c = 0; c < group_in; ++c) {
      const std::int64_t in_c = is.n * n + is.c * (g * group_in + c);
      const std::int64_t w_c = ws.n * oc + ws.c * c;
      for (std::int64_t i = 0; i < kh; ++i) {
        const std::int64_t iy = y * sh - pads.top + i * dh;
        if (iy < 0 || iy >= in_h) continue;
        for (std::int64_t j = 0; j < kw; ++j) {
          const std::int64_t ix = x * sw - pads.left + j * dw;
          if (ix < 0 || ix >= in_w) continue;
          acc += static_cast<double>(in.at_offset(in_c + is.h * iy + is.w * ix)) *
                 static_cast<double>(w.at_offset(w_c + ws.h * i + ws.w * j));
        }
      }
    }
    return acc;
  });
  return output;
}

}  // namespace refold::reference
