// native::winograd_conv2d (winograd_conv2d.h): validation, the decline rules and the chunked
// three-step schedule.
#include "kernels/native/winograd_conv2d.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/conv_rules.h"
#include "kernels/native/micro_kernel.h"
#include "kernels/native/weight_cache.h"
#include "kernels/native/winograd_tiles.h"
#include "kernels/reference/conv_common.h"
#include "refold/threads.h"

namespace refold::native {

namespace {

namespace ref = reference::detail;

// Scratch per chunk of tiles (V and M, 16 positions × (C_in + C_out) floats per tile): about
// what two cores' L2 caches hold, so a chunk's three steps hit cache.
constexpr std::int64_t kChunkBytes = std::int64_t{2} << 20;
constexpr std::int64_t kMinChannelRatio = 20;

// Why this kernel does not take a valid problem, or "" when it does.
std::string decline_reason(const Conv2dOptions& options, const ref::Conv2dGeometry& g) {
  if (g.kh != 3 || g.kw != 3) return "3x3 kernels only";
  if (!(options.stride == Size2d(1)) || !(options.dilation == Size2d(1)))
    return "stride 1 and dilation 1 only";
  if (g.in_channels % 8 != 0) return "input channels must be a multiple of 8";
  // Per tile, the matrix products cost ∝ C_in·C_out and the transforms ∝ C_in + C_out; below
  // C_in·C_out / (C_in + C_out) = 20 the transforms dominate and oneDNN's direct conv is faster
  // (measured, 2 threads: 48→48 at 56² 1.35× faster; 32→32 at 224² 0.86×, 8→64 at 56² 0.42×;
  // bench/RESULTS.md).
  if (g.in_channels * g.out_channels < kMinChannelRatio * (g.in_channels + g.out_channels))
    return fmt::format("too few channels to pay off ({}→{})", g.in_channels, g.out_channels);
  return {};
}

}  // namespace

Tensor winograd_conv2d(const Conv2dCall& call, std::string* declined) {
  if (!accept_conv2d("winograd", call, decline_reason, declined)) return {};
  const ref::Conv2dGeometry& g = call.geometry;
  const Tensor &input = call.input, &weight = call.weight, &bias = call.bias;
  const PostOps& post = call.post;

  TileGeometry t;
  t.height = g.in_h, t.width = g.in_w, t.in_channels = g.in_channels;
  t.out_h = g.out_h, t.out_w = g.out_w, t.out_channels = g.out_channels;
  t.pad_top = g.pads.top, t.pad_left = g.pads.left;
  t.tiles_h = (g.out_h + 1) / 2, t.tiles_w = (g.out_w + 1) / 2;
  const std::int64_t tiles = g.batch * t.tiles_per_image();

  const auto u = packed_weights(weight, Packing::Winograd, transform_weights);
  const ConvEpilogue epilogue(bias, g.out_channels, post);

  // Chunks of equal size (a multiple of the micro-kernel's 6 rows) within kChunkBytes.
  const std::int64_t bytes_per_tile =
      kPositions * (g.in_channels + g.out_channels) * std::int64_t{sizeof(float)};
  const std::int64_t chunks = std::max<std::int64_t>(1, tiles * bytes_per_tile / kChunkBytes);
  const std::int64_t chunk = (((tiles + chunks - 1) / chunks) + 5) / 6 * 6;
  Tensor v_buffer = empty({kPositions * chunk * g.in_channels});
  Tensor m_buffer = empty({kPositions * chunk * g.out_channels});
  float* v = v_buffer.data<float>();
  float* m = m_buffer.data<float>();
  const std::int64_t v_stride = chunk * g.in_channels;  // between positions ξ
  const std::int64_t m_stride = chunk * g.out_channels;

  Tensor output = empty({g.batch, g.out_channels, g.out_h, g.out_w}, MemoryFormat::ChannelsLast);
  const float* in = input.data<float>();
  float* out = output.data<float>();
  const float* packed = u->data();
  const std::int64_t blocks = (g.out_channels + kBlockWidth - 1) / kBlockWidth;
  const int threads = get_num_threads();

  for (std::int64_t first = 0; first < tiles; first += chunk) {
    const std::int64_t count = std::min(chunk, tiles - first);
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (std::int64_t s = 0; s < count; ++s) transform_input(in, t, first + s, s, v, v_stride);
        // One job per (position ξ, block of 16 output channels): M_ξ[:, block] = V_ξ · U_ξ[:,
        // block]
#pragma omp for schedule(static)
      for (std::int64_t job = 0; job < kPositions * blocks; ++job) {
        const std::int64_t xi = job / blocks, o0 = job % blocks * kBlockWidth;
        const std::int64_t width = std::min(kBlockWidth, g.out_channels - o0);
        const float* rows[kPanelRows];
        Panel p;
        p.a = rows;
        p.depth = g.in_channels;
        p.b = packed + xi * g.in_channels * g.out_channels + o0 * g.in_channels;
        p.width = width;
        p.ldc = g.out_channels;
        for (std::int64_t r0 = 0; r0 < count; r0 += kPanelRows) {
          p.rows = std::min(kPanelRows, count - r0);
          for (std::int64_t r = 0; r < p.rows; ++r)
            rows[r] = v + xi * v_stride + (r0 + r) * g.in_channels;
          p.c = m + (xi * m_stride) + r0 * g.out_channels + o0;
          multiply_panel(p);
        }
      }
#pragma omp for schedule(static)
      for (std::int64_t s = 0; s < count; ++s)
        transform_output(m, m_stride, t, first + s, s, epilogue.get(), out);
    }
  }
  return output;
}

}  // namespace refold::native
