// Reference conv_transpose2d (torch.nn.functional.conv_transpose2d), the adjoint of conv2d:
// direct loops over logical indices, any strides, accumulation in double, one rounding.
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/conv_common.h"
#include "refold/reference.h"

namespace refold::reference {

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const ConvTranspose2dOptions& options) {
  constexpr std::string_view op = "conv_transpose2d";
  detail::check_conv_operands(op, input, weight, "[C_in, C_out/groups, kh, kw]", options.stride,
                              options.dilation);
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
  // PyTorch's ConvTranspose2d weight is [C_in, C_out/groups, kh, kw] — the axes of the conv2d
  // it is the adjoint of — so C_out is weight.size(1)·groups and always divisible by groups.
  REFOLD_CHECK(weight.size(0) == in_channels,
               "{}: input has {} channels, weight expects {} (weight {} is [C_in, "
               "C_out/groups, kh, kw])",
               op, in_channels, weight.size(0), weight.description());
  const std::int64_t group_in = in_channels / groups;  // Cig: input channels per group
  const std::int64_t group_out = weight.size(1);       // Cog: output channels per group
  const std::int64_t out_channels = group_out * groups;
  detail::check_bias(op, bias, out_channels, input);

  const std::int64_t sh = options.stride.h, sw = options.stride.w;
  const std::int64_t ph = options.padding.h, pw = options.padding.w;
  const std::int64_t dh = options.dilation.h, dw = options.dilation.w;
  // (H − 1)·sh − 2·ph + dh·(kh − 1) + output_padding + 1; output_padding < stride or dilation.
  const std::int64_t out_h = detail::with_context(op, "height", [&] {
    return conv_transpose_output_size(in_h, kh, sh, ph, options.output_padding.h, dh);
  });
  const std::int64_t out_w = detail::with_context(op, "width", [&] {
    return conv_transpose_output_size(in_w, kw, sw, pw, options.output_padding.w, dw);
  });

  Tensor output = empty({batch, out_channels, out_h, out_w},
                        {input.dtype(), detail::conv_output_format(input, weight)});

  const FloatReader in(input), w(weight);
  const detail::Strides4 is = detail::strides4(in.strides()), ws = detail::strides4(w.strides());
  const std::vector<float> b = detail::bias_values(bias, out_channels);

  // The scatter definition
  //   out[n, g·Cog + o, y·sh − ph + i·dh, x·sw − pw + j·dw] += in[n, g·Cig + c, y, x]
  //                                                            · w[g·Cig + c, o, i, j]
  // is computed in gather form, one output element at a time: output row oy receives kernel
  // row i from input row y exactly when oy + ph − i·dh = y·sh, i.e. when (oy + ph − i·dh) is a
  // multiple of sh whose quotient y lies in [0, H) (the same for columns).
  detail::fill_output(
      output, [&](std::int64_t n, std::int64_t oc, std::int64_t oy, std::int64_t ox) {
        // out[n,oc,oy,ox] = bias[oc] + sum_{c<Cig, i, j : y, x valid}
        //                       in[n, g·Cig + c, y, x] · w[g·Cig + c, o, i, j]
        const std::int64_t g = oc / group_out, o = oc % group_out;
        double acc = b[static_cast<std::size_t>(oc)];
        for (std::int64_t c = 0; c < group_in; ++c) {
          const std::int64_t ic = g * group_in + c;
          const std::int64_t in_c = is.n * n + is.c * ic;
          const std::int64_t w_c = ws.n * ic + ws.c * o;  // weight dims 0, 1 are C_in, C_out/groups
          for (std::int64_t i = 0; i < kh; ++i) {
            const std::int64_t ty = oy + ph - i * dh;  // = y·sh when row i lands on oy
            if (ty < 0 || ty % sh != 0 || ty / sh >= in_h) continue;
            const std::int64_t y = ty / sh;
            for (std::int64_t j = 0; j < kw; ++j) {
              const std::int64_t tx = ox + pw - j * dw;
              if (tx < 0 || tx % sw != 0 || tx / sw >= in_w) continue;
              const std::int64_t x = tx / sw;
              acc += static_cast<double>(in.at_offset(in_c + is.h * y + is.w * x)) *
                     static_cast<double>(w.at_offset(w_c + ws.h * i + ws.w * j));
            }
          }
        }
        return acc;
      });
  return output;
}

}  // namespace refold::reference
