// native::direct_conv2d (direct_conv2d.h): validation, declines, weight packing, the job loop.
#include "kernels/native/direct_conv2d.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/conv_rules.h"
#include "kernels/native/micro_kernel.h"
#include "kernels/native/weight_cache.h"
#include "kernels/reference/conv_common.h"
#include "refold/threads.h"

namespace refold::native {

namespace {

namespace ref = reference::detail;

// w[o][i][ky][kx] → block [o0, o0 + width) at o0·taps·C_in, stored [tap][C_in][width].
std::vector<float> pack_weights(const Tensor& weight) {
  const std::int64_t outs = weight.size(0), ins = weight.size(1);
  const std::int64_t taps = weight.size(2) * weight.size(3);
  const std::vector<float> w = weight.to_vector();
  std::vector<float> packed(w.size());
  for (std::int64_t o = 0; o < outs; ++o) {
    const std::int64_t o0 = o / kBlockWidth * kBlockWidth;
    const std::int64_t width = std::min(kBlockWidth, outs - o0);
    for (std::int64_t i = 0; i < ins; ++i)
      for (std::int64_t t = 0; t < taps; ++t)
        packed[static_cast<std::size_t>(o0 * taps * ins + (t * ins + i) * width + (o - o0))] =
            w[static_cast<std::size_t>((o * ins + i) * taps + t)];
  }
  return packed;
}

std::string decline_reason(const Conv2dOptions& options, const ref::Conv2dGeometry& g) {
  // Where it beats oneDNN (docs/native-kernels.md): strided convs with a spatial kernel over
  // enough input channels. Stride 1 is Winograd's or oneDNN's; stems (3 input channels) and 1×1
  // downsampling convs are oneDNN's.
  if (options.stride.h < 2 && options.stride.w < 2) return "stride 1 (Winograd's or oneDNN's)";
  if (g.kh * g.kw < 9 || g.in_channels < 16)
    return fmt::format("kernel {}x{} over {} input channels is oneDNN's", g.kh, g.kw,
                       g.in_channels);
  return {};
}

}  // namespace

Tensor direct_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const Conv2dOptions& options, const PostOps& post, std::string* declined) {
  const auto accepted = accept_conv2d("native direct conv", input, weight, bias, options, post,
                                      decline_reason, declined);
  if (!accepted) return {};
  const ref::Conv2dGeometry& g = *accepted;

  const auto packed = packed_weights(weight, Packing::Direct, pack_weights);
  const ConvEpilogue epilogue(bias, g.out_channels, post);
  const std::vector<float> zeros(static_cast<std::size_t>(g.in_channels), 0.0f);
  Tensor output = empty({g.batch, g.out_channels, g.out_h, g.out_w}, MemoryFormat::ChannelsLast);

  const float* in = input.data<float>();
  float* out = output.data<float>();
  const std::int64_t c = g.in_channels, taps = g.kh * g.kw;
  const Size2d s = options.stride, d = options.dilation;
  const std::int64_t pixels = g.batch * g.out_h * g.out_w;
  const std::int64_t panels = (pixels + kPanelRows - 1) / kPanelRows;
  const std::int64_t blocks = (g.out_channels + kBlockWidth - 1) / kBlockWidth;

#pragma omp parallel num_threads(get_num_threads())
  {
    // This thread's (tap, row) → input pointer table of one panel.
    std::vector<const float*> table(static_cast<std::size_t>(taps * kPanelRows));
#pragma omp for schedule(static)
    for (std::int64_t job = 0; job < blocks * panels; ++job) {
      const std::int64_t o0 = job / panels * kBlockWidth, p0 = job % panels * kPanelRows;
      Panel p;
      p.rows = std::min(kPanelRows, pixels - p0);
      for (std::int64_t r = 0; r < p.rows; ++r) {
        const std::int64_t pixel = p0 + r;
        const std::int64_t n = pixel / (g.out_h * g.out_w);
        const std::int64_t oy = pixel / g.out_w % g.out_h, ox = pixel % g.out_w;
        for (std::int64_t ky = 0; ky < g.kh; ++ky) {
          const std::int64_t iy = oy * s.h - g.pads.top + ky * d.h;
          for (std::int64_t kx = 0; kx < g.kw; ++kx) {
            const std::int64_t ix = ox * s.w - g.pads.left + kx * d.w;
            const bool inside = iy >= 0 && iy < g.in_h && ix >= 0 && ix < g.in_w;
            table[static_cast<std::size_t>((ky * g.kw + kx) * kPanelRows + r)] =
                inside ? in + ((n * g.in_h + iy) * g.in_w + ix) * c : zeros.data();
          }
        }
      }
      p.a = table.data();
      p.taps = taps;
      p.depth = c;
      p.b = packed->data() + o0 * taps * c;
      p.width = std::min(kBlockWidth, g.out_channels - o0);
      p.c_offset = p0 * g.out_channels + o0;
      p.c = out + p.c_offset;
      p.ldc = g.out_channels;
      p.epilogue = &epilogue.get();
      p.channel = o0;
      multiply_panel(p);
    }
  }
  return output;
}

}  // namespace refold::native
