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
  // Plain copies, not structured bindings: clang 14 cannot capture those in the lambda below.
  const auto geometry = detail::check_conv2d(input, weight, bias, options);
  const std::int64_t batch = geometry.batch, in_channels = geometry.in_channels;
  const std::int64_t in_h = geometry.in_h, in_w = geometry.in_w;
  const std::int64_t out_channels = geometry.out_channels, groups = geometry.groups;
  const std::int64_t kh = geometry.kh, kw = geometry.kw, out_h = geometry.out_h;
  const std::int64_t out_w = geometry.out_w;
  const auto pads = geometry.pads;
  const std::int64_t sh = options.stride.h, sw = options.stride.w;
  const std::int64_t dh = options.dilation.h, dw = options.dilation.w;

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
