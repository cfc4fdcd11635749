// Reference conv_transpose2d (torch.nn.functional.conv_transpose2d), the adjoint of conv2d:
// PyTorch's checks, then the loops of every reference conv (conv_nd.cpp: any strides,
// accumulation in double, one rounding).
#include <cstdint>

#include "core/check.h"
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
  const std::int64_t out_channels = weight.size(1) * groups;
  detail::check_bias(op, bias, out_channels, input);

  const std::int64_t ph = options.padding.h, pw = options.padding.w;
  const Size2d s = options.stride, d = options.dilation;
  // (H − 1)·sh − 2·ph + dh·(kh − 1) + output_padding + 1; output_padding < stride or dilation.
  const std::int64_t out_h = detail::with_context(op, "height", [&] {
    return conv_transpose_output_size(in_h, kh, s.h, ph, options.output_padding.h, d.h);
  });
  const std::int64_t out_w = detail::with_context(op, "width", [&] {
    return conv_transpose_output_size(in_w, kw, s.w, pw, options.output_padding.w, d.w);
  });

  Tensor output = empty({batch, out_channels, out_h, out_w},
                        {input.dtype(), detail::conv_output_format(input, weight)});

  // The 2-d transposed conv is the 3-d one with a unit depth axis (conv_nd.cpp has the loops
  // and the math).
  detail::conv_transpose_gather(input, weight, bias, detail::window_2d(s, d, ph, pw, groups),
                                output);
  return output;
}

}  // namespace refold::reference
