// Reference conv2d (torch.nn.functional.conv2d): PyTorch's checks, then the loops of every
// reference conv (conv_nd.cpp: any strides, accumulation in double, one rounding).
#include "kernels/reference/conv_common.h"
#include "refold/reference.h"

namespace refold::reference {

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
              const Conv2dOptions& options) {
  return detail::conv2d_checked(input, weight, bias, options,
                                detail::check_conv2d(input, weight, bias, options));
}

namespace detail {

Tensor conv2d_checked(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dOptions& options, const Conv2dGeometry& g) {
  Tensor output = empty({g.batch, g.out_channels, g.out_h, g.out_w},
                        {input.dtype(), detail::conv_output_format(input, weight)});
  // The 2-d conv is the 3-d one with a unit depth axis (conv_nd.cpp has the loops and the math).
  detail::conv_gather(
      input, weight, bias,
      detail::window_2d(options.stride, options.dilation, g.pads.top, g.pads.left, g.groups),
      output);
  return output;
}

}  // namespace detail

}  // namespace refold::reference
