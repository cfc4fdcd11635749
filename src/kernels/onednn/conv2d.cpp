// oneDNN conv2d: a validated call (kernels/conv2d_call.h) turned into a oneDNN problem (see
// conv_primitive.h).
#include "kernels/onednn/conv2d.h"

#include <algorithm>
#include <cstdint>

#include "core/check.h"
#include "kernels/native/row_threads.h"
#include "kernels/onednn/conv_primitive.h"
#include "kernels/reference/conv_common.h"

namespace refold::onednn {

namespace ref = reference::detail;

namespace {

// Whether a depthwise conv with `multiplier` output channels per input channel runs faster as
// one with one output channel per input channel over the input repeated (see conv2d below).
// oneDNN's depthwise kernels take only the latter; its grouped kernels pad each group's output
// channels to the SIMD block, and were 3–12 GFLOP/s on AVX2 against 30–55 for the depthwise
// kernel over the repeated input. With AVX-512 the grouped kernels are fast from 4 channels a
// group, and the repeat's pass over memory only pays off while each repeated input pixel feeds
// 4 taps or more (kh·kw ≥ 4·sh·sw). Measured on an AVX-512 Xeon and with oneDNN capped at AVX2
// there (docs/native-kernels.md, "Depthwise with a channel multiplier").
bool repeat_pays_off(std::int64_t multiplier, std::int64_t taps, std::int64_t stride_area) {
  const bool reused = taps >= 4 * stride_area;
  if (detail::has_avx512_core()) return multiplier <= 3 && reused;
  return multiplier <= 16 && (multiplier <= 4 || reused);
}

// out = repeat_interleave(x, k, dim=1), in x's layout (dense NCHW or NHWC): output channel
// c·k + j is input channel c.
template <typename T>
void repeat_channels(const T* x, T* out, std::int64_t n, std::int64_t c, std::int64_t hw,
                     std::int64_t k, bool channels_last) {
  const int threads = native::row_kernel_threads(n * c * hw * k);
  if (channels_last) {  // [N·H·W][C] → [N·H·W][C·k]
    const std::int64_t pixels = n * hw;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (std::int64_t p = 0; p < pixels; ++p) {
      const T* a = x + p * c;
      T* b = out + p * c * k;
      for (std::int64_t i = 0; i < c; ++i)
        for (std::int64_t j = 0; j < k; ++j) b[i * k + j] = a[i];
    }
    return;
  }
  const std::int64_t planes = n * c;  // [N·C][H·W] → [N·C·k][H·W]
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t j = 0; j < k; ++j) std::copy_n(x + p * hw, hw, out + (p * k + j) * hw);
}

Tensor repeat_channels(const Tensor& x, std::int64_t k, MemoryFormat layout) {
  const std::int64_t n = x.size(0), c = x.size(1), hw = x.size(2) * x.size(3);
  Tensor out = empty({n, c * k, x.size(2), x.size(3)}, {x.dtype(), layout});
  const bool channels_last = layout == MemoryFormat::ChannelsLast;
  if (x.dtype() == DType::Float32) {
    repeat_channels(static_cast<const float*>(x.data_ptr()), static_cast<float*>(out.data_ptr()), n,
                    c, hw, k, channels_last);
  } else {  // bfloat16: the same 16-bit patterns
    repeat_channels(static_cast<const std::uint16_t*>(x.data_ptr()),
                    static_cast<std::uint16_t*>(out.data_ptr()), n, c, hw, k, channels_last);
  }
  return out;
}

}  // namespace

Tensor conv2d(const Conv2dCall& call, std::string* declined) {
  constexpr std::string_view op = "conv2d";
  const auto [batch, in_channels, in_h, in_w, out_channels, kh, kw, groups, out_h, out_w, pads] =
      call.geometry;
  const Size2d s = call.options.stride, d = call.options.dilation;

  // A depthwise conv with k output channels per input channel is, exactly, a depthwise conv
  // (one output channel per group) over the input with each channel repeated k times: output
  // channel c·k + j reads input channel c in both, and the weight [C·k, 1, kh, kw] is the same.
  const std::int64_t multiplier = out_channels / groups;
  if (groups == in_channels && groups > 1 && multiplier > 1 &&
      (call.input.dtype() == DType::Float32 || call.input.dtype() == DType::BFloat16) &&
      repeat_pays_off(multiplier, kh * kw, s.h * s.w)) {
    const MemoryFormat layout = ref::conv_output_format(call.input, call.weight);
    if (call.input.is_contiguous(layout) && call.input.numel() > 0) {
      const Tensor repeated = repeat_channels(call.input, multiplier, layout);
      Conv2dOptions depthwise = call.options;
      depthwise.groups = out_channels;
      ref::Conv2dGeometry g = call.geometry;
      g.in_channels = out_channels;
      g.groups = out_channels;
      return conv2d({repeated, call.weight, call.bias, depthwise, call.post, g}, declined);
    }
  }

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
