// tiles.h: the weight transform (once per weight, scalar) and the per-tile input and output
// transforms (AVX2, 8 channels per vector).
#include "kernels/native/winograd_tiles.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "kernels/native/cpu.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>
#endif

namespace refold::native {

std::vector<float> transform_weights(const Tensor& weight) {
  const std::int64_t outs = weight.size(0), ins = weight.size(1);
  const std::vector<float> w = weight.to_vector();  // logical [o][i][ky][kx]
  std::vector<float> packed(static_cast<std::size_t>(kPositions * ins * outs));
  for (std::int64_t o = 0; o < outs; ++o) {
    const std::int64_t block = o / kBlockWidth * kBlockWidth;
    const std::int64_t width = std::min(kBlockWidth, outs - block);
    for (std::int64_t i = 0; i < ins; ++i) {
      const float* g = w.data() + (o * ins + i) * 9;
      // q = G g: rows q0 = g0, q1 = (g0 + g1 + g2)/2, q2 = (g0 − g1 + g2)/2, q3 = g2.
      std::array<std::array<float, 3>, 4> q{};
      for (int x = 0; x < 3; ++x) {
        const float g0 = g[x], g1 = g[3 + x], g2 = g[6 + x];
        q[0][x] = g0;
        q[1][x] = 0.5f * (g0 + g1 + g2);
        q[2][x] = 0.5f * (g0 - g1 + g2);
        q[3][x] = g2;
      }
      // U = q Gᵀ: the same combination along each row.
      for (int y = 0; y < 4; ++y) {
        const float q0 = q[y][0], q1 = q[y][1], q2 = q[y][2];
        const std::array<float, 4> u{q0, 0.5f * (q0 + q1 + q2), 0.5f * (q0 - q1 + q2), q2};
        for (int x = 0; x < 4; ++x) {
          const std::int64_t xi = y * 4 + x;
          packed[static_cast<std::size_t>(xi * ins * outs + block * ins + i * width +
                                          (o - block))] = u[static_cast<std::size_t>(x)];
        }
      }
    }
  }
  return packed;
}

#if REFOLD_HAVE_X86_KERNELS

namespace {

struct TilePosition {
  std::int64_t image, ty, tx;
};

TilePosition locate(const TileGeometry& g, std::int64_t tile) {
  const std::int64_t per_image = g.tiles_per_image();
  const std::int64_t within = tile % per_image;
  return {tile / per_image, within / g.tiles_w, within % g.tiles_w};
}

// The four-point transforms shared by both directions of each 2-d transform:
//   Bᵀ: (d0 − d2, d1 + d2, d2 − d1, d1 − d3)       Aᵀ: (m0 + m1 + m2, m1 − m2 − m3)
REFOLD_TARGET_AVX2 inline void input_1d(const __m256* d, std::ptrdiff_t step, __m256* v,
                                        std::ptrdiff_t out_step) {
  v[0] = _mm256_sub_ps(d[0], d[2 * step]);
  v[out_step] = _mm256_add_ps(d[step], d[2 * step]);
  v[2 * out_step] = _mm256_sub_ps(d[2 * step], d[step]);
  v[3 * out_step] = _mm256_sub_ps(d[step], d[3 * step]);
}

REFOLD_TARGET_AVX2 inline void output_1d(const __m256* m, std::ptrdiff_t step, __m256* y,
                                         std::ptrdiff_t out_step) {
  const __m256 m1 = m[step], m2 = m[2 * step];
  y[0] = _mm256_add_ps(_mm256_add_ps(m[0], m1), m2);
  y[out_step] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m[3 * step]);
}

}  // namespace

REFOLD_TARGET_AVX2 void transform_input(const float* input, const TileGeometry& g,
                                        std::int64_t tile, std::int64_t slot, float* v,
                                        std::int64_t position_stride) {
  const TilePosition p = locate(g, tile);
  const std::int64_t y0 = 2 * p.ty - g.pad_top, x0 = 2 * p.tx - g.pad_left;
  const std::int64_t c = g.in_channels;
  const float* image = input + p.image * g.height * g.width * c;
  // Which of the 4×4 input pixels lie inside the image (the rest are padding zeros).
  std::array<bool, 4> row_in{}, col_in{};
  for (int k = 0; k < 4; ++k) {
    row_in[static_cast<std::size_t>(k)] = y0 + k >= 0 && y0 + k < g.height;
    col_in[static_cast<std::size_t>(k)] = x0 + k >= 0 && x0 + k < g.width;
  }
  float* out = v + slot * c;
  for (std::int64_t ch = 0; ch < c; ch += 8) {
    __m256 d[16], t[16];
    for (int y = 0; y < 4; ++y) {
      for (int x = 0; x < 4; ++x) {
        const bool inside =
            row_in[static_cast<std::size_t>(y)] && col_in[static_cast<std::size_t>(x)];
        d[y * 4 + x] = inside ? _mm256_loadu_ps(image + ((y0 + y) * g.width + x0 + x) * c + ch)
                              : _mm256_setzero_ps();
      }
    }
    for (int x = 0; x < 4; ++x) input_1d(d + x, 4, t + x, 4);          // Bᵀ d: down each column
    for (int y = 0; y < 4; ++y) input_1d(t + 4 * y, 1, d + 4 * y, 1);  // (Bᵀ d) B: along each row
    for (int xi = 0; xi < 16; ++xi) _mm256_storeu_ps(out + xi * position_stride + ch, d[xi]);
  }
}

REFOLD_TARGET_AVX2 void transform_output(const float* m, std::int64_t position_stride,
                                         const TileGeometry& g, std::int64_t tile,
                                         std::int64_t slot, const Epilogue& epilogue, float* out) {
  const TilePosition p = locate(g, tile);
  const std::int64_t c = g.out_channels;
  const std::int64_t oy = 2 * p.ty, ox = 2 * p.tx;
  const std::int64_t rows = std::min<std::int64_t>(2, g.out_h - oy);
  const std::int64_t cols = std::min<std::int64_t>(2, g.out_w - ox);
  const std::int64_t image_offset = p.image * g.out_h * g.out_w * c;
  const float* in = m + slot * c;
  for (std::int64_t ch = 0; ch < c; ch += 8) {
    __m256 s[16], t[8], y[4];
    for (int xi = 0; xi < 16; ++xi) s[xi] = _mm256_loadu_ps(in + xi * position_stride + ch);
    for (int x = 0; x < 4; ++x) output_1d(s + x, 4, t + x, 4);          // Aᵀ M: down each column
    for (int r = 0; r < 2; ++r) output_1d(t + 4 * r, 1, y + 2 * r, 1);  // (Aᵀ M) A: each row
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t q = 0; q < cols; ++q) {
        const std::int64_t at = image_offset + ((oy + r) * g.out_w + ox + q) * c + ch;
        _mm256_storeu_ps(out + at, finish(y[r * 2 + q], epilogue, ch, at));
      }
    }
  }
}

#else

void transform_input(const float*, const TileGeometry&, std::int64_t, std::int64_t, float*,
                     std::int64_t) {}
void transform_output(const float*, std::int64_t, const TileGeometry&, std::int64_t, std::int64_t,
                      const Epilogue&, float*) {}

#endif

}  // namespace refold::native
