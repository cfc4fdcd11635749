// native/grid_sample.h.
#include "kernels/native/grid_sample.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"
#include "kernels/reference/grid_sample_taps.h"

namespace refold::native {
namespace {

// From this many channels a point's taps blend rows of C (one vector FMA per tap and 8 or 16
// channels) rather than C planes element by element (RT-DETR's deformable attention: 32 channels
// a head).
constexpr std::int64_t kChannelVector = 8;
constexpr std::int64_t kPointChunk = 256;  // points per job

// dst[o] = Σ_t weight[o][t] · src[offset[o][t]] over one plane (a −1 offset reads zero).
void sample_plane(const float* src, const std::int64_t* offset, const float* weight, int taps,
                  std::int64_t points, float* dst) {
  for (std::int64_t o = 0; o < points; ++o, offset += taps, weight += taps) {
    float sum = 0;
    for (int t = 0; t < taps; ++t)
      if (offset[t] >= 0) sum += weight[t] * src[offset[t]];
    dst[o] = sum;
  }
}

// The taps of `count` points (coordinate pairs x, y at coords): offsets in an H × W plane (−1
// reads zero) and weights, `taps` (1 or 4) a point.
[[gnu::always_inline]] inline void point_taps(const float* coords, std::int64_t count,
                                              std::int64_t h, std::int64_t w,
                                              const reference::GridSampleParams& p, int taps,
                                              std::int64_t* offsets, float* weights) {
  for (std::int64_t i = 0; i < count; ++i) {
    // The grid lists x (along W) first.
    const auto x = reference::detail::grid_axis_taps(coords[2 * i], w, p);
    const auto y = reference::detail::grid_axis_taps(coords[2 * i + 1], h, p);
    int t = 0;
    for (int a = 0; a < y.count; ++a)
      for (int b = 0; b < x.count; ++b, ++t) {
        const auto& ty = y.taps[static_cast<std::size_t>(a)];
        const auto& tx = x.taps[static_cast<std::size_t>(b)];
        offsets[i * taps + t] = ty.index < 0 || tx.index < 0 ? -1 : ty.index * w + tx.index;
        weights[i * taps + t] = static_cast<float>(ty.weight * tx.weight);
      }
  }
}

// One job of the channel-vector path: up to kPointChunk points, their taps found here, then
// dst[o][c] = Σ_t weight[o][t] · rows[offset[o][t]][c] (rows [H·W][C]). Inlined into the two
// callers below, so the taps' rounding and the loop over C compile for each ISA. (The sum kept in
// a register across the taps instead, 16 channels a vector, measured the same.)
[[gnu::always_inline]] inline void blend_points(const float* rows, const float* coords,
                                                std::int64_t count, std::int64_t h, std::int64_t w,
                                                std::int64_t channels,
                                                const reference::GridSampleParams& p, int taps,
                                                float* dst) {
  std::int64_t offset[kPointChunk * 4];
  float weight[kPointChunk * 4];
  point_taps(coords, count, h, w, p, taps, offset, weight);
  for (std::int64_t o = 0; o < count; ++o) {
    float* out = dst + o * channels;
    for (std::int64_t c = 0; c < channels; ++c) out[c] = 0;
    for (int t = 0; t < taps; ++t) {
      const std::int64_t at = offset[o * taps + t];
      if (at < 0) continue;
      const float wt = weight[o * taps + t];
      const float* row = rows + at * channels;
      for (std::int64_t c = 0; c < channels; ++c) out[c] += wt * row[c];
    }
  }
}

REFOLD_TARGET_AVX2 void blend_points_avx2(const float* rows, const float* coords,
                                          std::int64_t count, std::int64_t h, std::int64_t w,
                                          std::int64_t channels,
                                          const reference::GridSampleParams& p, int taps,
                                          float* dst) {
  blend_points(rows, coords, count, h, w, channels, p, taps, dst);
}

REFOLD_TARGET_AVX512 void blend_points_avx512(const float* rows, const float* coords,
                                              std::int64_t count, std::int64_t h, std::int64_t w,
                                              std::int64_t channels,
                                              const reference::GridSampleParams& p, int taps,
                                              float* dst) {
  blend_points(rows, coords, count, h, w, channels, p, taps, dst);
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const reference::GridSampleParams& p,
                   std::string* declined) {
  constexpr const char* name = "grid_sample";
  if (!input.defined() || !grid.defined() || input.dtype() != DType::Float32 ||
      grid.dtype() != DType::Float32)
    return decline(name, "not float32 X and grid", declined);
  if (input.dim() != 4 || grid.dim() != 4 || grid.size(0) != input.size(0) || grid.size(3) != 2)
    return decline(name, "not X [N, C, H, W] with grid [N, Ho, Wo, 2]", declined);
  if (p.mode == reference::GridSampleMode::Cubic) return decline(name, "cubic mode", declined);
  if (!input.is_contiguous())
    return decline(
        name, fmt::format("X's strides [{}] are not dense NCHW", fmt::join(input.strides(), ", ")),
        declined);
  const std::int64_t n_count = input.size(0), channels = input.size(1), h = input.size(2),
                     w = input.size(3);
  const std::int64_t points = grid.size(1) * grid.size(2), plane = h * w;
  Tensor out = empty({n_count, channels, grid.size(1), grid.size(2)}, DType::Float32);
  if (out.numel() == 0) return out;
  const Tensor g = grid.contiguous();
  const float* coords = g.data<float>();
  // Per point: up to 4 (offset in the plane, weight); −1 reads zero. Nearest fills one.
  const int taps = p.mode == reference::GridSampleMode::Nearest ? 1 : 4;
  if (channels < kChannelVector || !cpu_has_avx2_fma()) {
    // Few channels: the taps found once, then each plane read through them.
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(n_count * points * taps));
    std::vector<float> weights(offsets.size());
    const std::int64_t chunks = (n_count * points + kPointChunk - 1) / kPointChunk;
    const int tap_threads = row_kernel_threads(n_count * points * taps);
#pragma omp parallel for schedule(static) num_threads(tap_threads) if (tap_threads > 1)
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) {
      const std::int64_t first = chunk * kPointChunk;
      point_taps(coords + 2 * first, std::min(kPointChunk, n_count * points - first), h, w, p, taps,
                 offsets.data() + first * taps, weights.data() + first * taps);
    }
    const float* xs = input.data<float>();
    float* ys = out.data<float>();
    const std::int64_t planes = n_count * channels;
    const int threads = row_kernel_threads(planes * points * taps);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (std::int64_t pc = 0; pc < planes; ++pc) {
      const std::int64_t n = pc / channels;
      sample_plane(xs + pc * plane, offsets.data() + n * points * taps,
                   weights.data() + n * points * taps, taps, points, ys + pc * points);
    }
    return out;
  }
  // Channels as vectors: X as [N][H·W][C], each point's taps blend rows of C, into [N][points][C]
  // then transposed to [N, C, Ho, Wo].
  const Tensor rows = input.permute({0, 2, 3, 1}).contiguous();
  Tensor blended = empty({n_count, points, channels}, DType::Float32);
  const std::int64_t chunks = (points + kPointChunk - 1) / kPointChunk;
  const int threads = row_kernel_threads(n_count * points * taps * channels);
  const float* xr = rows.data<float>();
  float* yb = blended.data<float>();
  const auto blend = vector_isa() == VectorIsa::Avx512 ? blend_points_avx512 : blend_points_avx2;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t job = 0; job < n_count * chunks; ++job) {
    const std::int64_t n = job / chunks, first = job % chunks * kPointChunk;
    const std::int64_t at = n * points + first;
    blend(xr + n * plane * channels, coords + 2 * at, std::min(kPointChunk, points - first), h, w,
          channels, p, taps, yb + at * channels);
  }
  out.copy_(blended.reshape({n_count, grid.size(1), grid.size(2), channels}).permute({0, 3, 1, 2}));
  return out;
}

}  // namespace refold::native
