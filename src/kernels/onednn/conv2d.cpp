// oneDNN conv2d: a validated call (kernels/conv2d_call.h) turned into a oneDNN problem (see
// conv_primitive.h).
#include "kernels/onednn/conv2d.h"

#include <cstdint>

#include "core/check.h"
#include "kernels/onednn/conv_primitive.h"
#include "kernels/reference/conv_common.h"

namespace refold::onednn {

namespace ref = reference::detail;

Tensor conv2d(const Conv2dCall& call, std::string* declined) {
  constexpr std::string_view op = "conv2d";
  const auto [batch, in_channels, in_h, in_w, out_channels, kh, kw, groups, out_h, out_w, pads] =
      call.geometry;
  const Size2d s = call.options.stride, d = call.options.dilation;

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
  return detail::run_conv(p, call.input, call.weight, call.bias, call.post, declined);
}

}  // namespace refold::onednn
