// native::direct_conv2d (direct_conv2d.h): validation, declines, weight packing, the job loop.
#include "kernels/native/direct_conv2d.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/conv_rules.h"
#include "kernels/native/cpu.h"
#include "kernels/native/micro_kernel.h"
#include "kernels/native/weight_cache.h"
#include "kernels/reference/conv_common.h"
#include "refold/conv_algorithm.h"
#include "refold/threads.h"

namespace refold::native {

namespace {

namespace ref = reference::detail;

// Packed weights up to this size run panel-major (below): half of Zen 2/3's 512 KiB L2.
constexpr std::int64_t kPanelMajorWeightBytes = 256 * 1024;

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
  // enough input channels. Stride 1 is Winograd's or oneDNN's; stems (3 input channels), 1×1
  // downsampling convs and 16–32 input channels (YOLOv8's first strided convs: oneDNN's
  // jit:avx2 1.2–2.1× faster, paired runs) are oneDNN's.
  if (options.stride.h < 2 && options.stride.w < 2) return "stride 1 (Winograd's or oneDNN's)";
  if (get_conv_algorithm() == ConvAlgorithm::Native) return {};  // wherever it runs
  // Where oneDNN has its AVX-512 convs, brgconv:avx512_core is faster than this kernel at every
  // RepVGG-A0 strided shape (48→48 at 112² to 192→1280 at 14², paired runs, bench/RESULTS.md):
  // 1.5–1.7× on a full-rate Xeon (against this kernel's AVX-512 form), 1.07–1.42× on Zen 4,
  // which splits 512-bit ops in two (against its AVX2 form).
  if (onednn_has_avx512_convs()) return "oneDNN's AVX-512 conv is faster on this CPU";
  if (g.kh * g.kw < 9 || g.in_channels < 48)
    return fmt::format("kernel {}x{} over {} input channels is oneDNN's", g.kh, g.kw,
                       g.in_channels);
  return {};
}

}  // namespace

Tensor direct_conv2d(const Conv2dCall& call, std::string* declined) {
  if (!accept_conv2d("native direct conv", call, decline_reason, declined)) return {};
  const ref::Conv2dGeometry& g = call.geometry;
  const Tensor &input = call.input, &weight = call.weight, &bias = call.bias;
  const Conv2dOptions& options = call.options;
  const PostOps& post = call.post;

  const auto packed = packed_weights(weight, Packing::Direct, pack_weights);
  const ConvEpilogue epilogue(bias, g.out_channels, post);
  const std::vector<float> zeros(static_cast<std::size_t>(g.in_channels), 0.0f);
  Tensor output = conv_output(call);

  const float* in = input.data<float>();
  float* out = output.data<float>();
  const std::int64_t c = g.in_channels, taps = g.kh * g.kw;
  const Size2d s = options.stride, d = options.dilation;
  const std::int64_t pixels = g.batch * g.out_h * g.out_w;
  const std::int64_t panels = (pixels + kPanelRows - 1) / kPanelRows;
  const std::int64_t columns = (g.out_channels + kPanelWidth - 1) / kPanelWidth;

  // Job order. When the packed weights fit in half a core's L2 (C_in·C_out·taps ≤ 64 Ki floats:
  // a 3×3 48→96 conv is 162 KiB), a job is one panel of pixels times every channel block: the
  // panel's pointer table is built once and its input rows stay in L1 across the columns.
  // Otherwise a job is one (32 output channels, panel), column-major, so a thread's consecutive
  // jobs reuse one weight panel from cache.
  const bool panel_major =
      static_cast<std::int64_t>(packed->size() * sizeof(float)) <= kPanelMajorWeightBytes;
  const std::int64_t jobs = panel_major ? panels : columns * panels;

#pragma omp parallel num_threads(get_num_threads())
  {
    // This thread's (tap, row) → input pointer table of one panel.
    std::vector<const float*> table(static_cast<std::size_t>(taps * kPanelRows));
    // Fills the table for the panel starting at pixel p0: (n, oy, ox) of its first pixel by
    // division, then stepped along the row-major pixel order.
    auto fill_table = [&](std::int64_t p0, std::int64_t rows) {
      std::int64_t n = p0 / (g.out_h * g.out_w), oy = p0 / g.out_w % g.out_h, ox = p0 % g.out_w;
      for (std::int64_t r = 0; r < rows; ++r, ++ox) {
        if (ox == g.out_w) {
          ox = 0;
          if (++oy == g.out_h) oy = 0, ++n;
        }
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
    };
#pragma omp for schedule(static)
    for (std::int64_t job = 0; job < jobs; ++job) {
      const std::int64_t panel = panel_major ? job : job % panels;
      const std::int64_t p0 = panel * kPanelRows;
      Panel p;
      p.rows = std::min(kPanelRows, pixels - p0);
      fill_table(p0, p.rows);
      p.a = table.data();
      p.taps = taps;
      p.depth = c;
      p.ldc = g.out_channels;
      p.epilogue = &epilogue.get();
      const std::int64_t first_column = panel_major ? 0 : job / panels;
      const std::int64_t last_column = panel_major ? columns : first_column + 1;
      for (std::int64_t column = first_column; column < last_column; ++column) {
        const std::int64_t o0 = column * kPanelWidth;
        p.b = packed->data() + o0 * taps * c;
        p.width = std::min(kPanelWidth, g.out_channels - o0);
        p.c_offset = p0 * g.out_channels + o0;
        p.c = out + p.c_offset;
        p.channel = o0;
        multiply_panel(p);
      }
    }
  }
  return output;
}

}  // namespace refold::native
