// tiles.h: the weight transform (once per weight, scalar, in double) and the per-tile input and
// output transforms (AVX2, 8 channels per vector), each written once over the tile side m: the
// 2-d transforms apply the 1-d ones down the columns and then along the rows.
#include "kernels/native/winograd_tiles.h"

#include <algorithm>
#include <array>
#include <cstddef>

#include "kernels/native/cpu.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>
#endif

namespace refold::native {

namespace {

// G g for one column g = (g0, g1, g2) of the kernel: α values (the rows of tiles.h's G).
template <int M>
std::array<double, M + 2> weight_1d(double g0, double g1, double g2) {
  if constexpr (M == 2) {
    return {g0, 0.5 * (g0 + g1 + g2), 0.5 * (g0 - g1 + g2), g2};
  } else {
    return {g0,
            (g0 + g1 + g2) / 3,
            -(g0 - g1 + g2) / 3,
            -(16 * g0 + 8 * g1 + 4 * g2) / 15,
            (g0 - 2 * g1 + 4 * g2) / 15,
            g2};
  }
}

template <int M>
std::vector<float> transform_weights_for(const Tensor& weight) {
  constexpr int kAlpha = M + 2;
  const std::int64_t outs = weight.size(0), ins = weight.size(1);
  const std::vector<float> w = weight.to_vector();  // logical [o][i][ky][kx]
  std::vector<float> packed(static_cast<std::size_t>(kAlpha * kAlpha * ins * outs));
  for (std::int64_t o = 0; o < outs; ++o) {
    const std::int64_t block = o / kBlockWidth * kBlockWidth;
    const std::int64_t width = std::min(kBlockWidth, outs - block);
    for (std::int64_t i = 0; i < ins; ++i) {
      const float* g = w.data() + (o * ins + i) * 9;
      // q = G g: down each of the kernel's three columns.
      std::array<std::array<double, 3>, kAlpha> q{};
      for (int x = 0; x < 3; ++x) {
        const auto column = weight_1d<M>(g[x], g[3 + x], g[6 + x]);
        for (int y = 0; y < kAlpha; ++y) q[y][x] = column[static_cast<std::size_t>(y)];
      }
      // U = q Gᵀ: the same combination along each row.
      for (int y = 0; y < kAlpha; ++y) {
        const auto u = weight_1d<M>(q[y][0], q[y][1], q[y][2]);
        for (int x = 0; x < kAlpha; ++x) {
          const std::int64_t xi = y * kAlpha + x;
          packed[static_cast<std::size_t>(xi * ins * outs + block * ins + i * width +
                                          (o - block))] =
              static_cast<float>(u[static_cast<std::size_t>(x)]);
        }
      }
    }
  }
  return packed;
}

}  // namespace

std::vector<float> transform_weights(const Tensor& weight, WinogradTile tile) {
  return tile == WinogradTile::F2x2 ? transform_weights_for<2>(weight)
                                    : transform_weights_for<4>(weight);
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

// The 1-d transforms, α values d[k·step] → v[k·out_step] (Bᵀ) and α → m values (Aᵀ):
//   F(2×2)  Bᵀ: (d0 − d2, d1 + d2, d2 − d1, d1 − d3)    Aᵀ: (m0 + m1 + m2, m1 − m2 − m3)
//   F(4×4)  Bᵀ, with r = d4 − d2, s = d3 − d1:
//             (d0 − d2 + r + 1.5·s, r + s + 1.5·(d2 + d3), r − s + 1.5·(d3 − d2),
//              r + 2·s, r − 0.5·s, d5 − d3 − s + 1.5·r)
//           Aᵀ, with a = m1 + m2, b = m1 − m2:
//             (m0 + a + m3 + m4, b + m3/2 − 2·m4, a + m3/4 + 4·m4, b + m3/8 − 8·m4 + m5)
template <int M>
REFOLD_TARGET_AVX2 inline void input_1d(const __m256* d, std::ptrdiff_t step, __m256* v,
                                        std::ptrdiff_t out_step) {
  if constexpr (M == 2) {
    v[0] = _mm256_sub_ps(d[0], d[2 * step]);
    v[out_step] = _mm256_add_ps(d[step], d[2 * step]);
    v[2 * out_step] = _mm256_sub_ps(d[2 * step], d[step]);
    v[3 * out_step] = _mm256_sub_ps(d[step], d[3 * step]);
  } else {
    const __m256 half = _mm256_set1_ps(0.5f), three_halves = _mm256_set1_ps(1.5f);
    const __m256 two = _mm256_set1_ps(2.0f);
    const __m256 d0 = d[0], d1 = d[step], d2 = d[2 * step], d3 = d[3 * step];
    const __m256 d4 = d[4 * step], d5 = d[5 * step];
    const __m256 r = _mm256_sub_ps(d4, d2), s = _mm256_sub_ps(d3, d1);
    v[0] = _mm256_fmadd_ps(three_halves, s, _mm256_add_ps(_mm256_sub_ps(d0, d2), r));
    v[out_step] = _mm256_fmadd_ps(three_halves, _mm256_add_ps(d2, d3), _mm256_add_ps(r, s));
    v[2 * out_step] = _mm256_fmadd_ps(three_halves, _mm256_sub_ps(d3, d2), _mm256_sub_ps(r, s));
    v[3 * out_step] = _mm256_fmadd_ps(two, s, r);
    v[4 * out_step] = _mm256_fnmadd_ps(half, s, r);
    v[5 * out_step] = _mm256_fmadd_ps(three_halves, r, _mm256_sub_ps(_mm256_sub_ps(d5, d3), s));
  }
}

template <int M>
REFOLD_TARGET_AVX2 inline void output_1d(const __m256* m, std::ptrdiff_t step, __m256* y,
                                         std::ptrdiff_t out_step) {
  if constexpr (M == 2) {
    const __m256 m1 = m[step], m2 = m[2 * step];
    y[0] = _mm256_add_ps(_mm256_add_ps(m[0], m1), m2);
    y[out_step] = _mm256_sub_ps(_mm256_sub_ps(m1, m2), m[3 * step]);
  } else {
    const __m256 a = _mm256_add_ps(m[step], m[2 * step]), b = _mm256_sub_ps(m[step], m[2 * step]);
    const __m256 m3 = m[3 * step], m4 = m[4 * step];
    y[0] = _mm256_add_ps(_mm256_add_ps(m[0], a), _mm256_add_ps(m3, m4));
    y[out_step] =
        _mm256_fnmadd_ps(_mm256_set1_ps(2.0f), m4, _mm256_fmadd_ps(_mm256_set1_ps(0.5f), m3, b));
    y[2 * out_step] =
        _mm256_fmadd_ps(_mm256_set1_ps(4.0f), m4, _mm256_fmadd_ps(_mm256_set1_ps(0.25f), m3, a));
    y[3 * out_step] = _mm256_add_ps(
        _mm256_fnmadd_ps(_mm256_set1_ps(8.0f), m4, _mm256_fmadd_ps(_mm256_set1_ps(0.125f), m3, b)),
        m[5 * step]);
  }
}

template <int M>
REFOLD_TARGET_AVX2 void transform_input_for(const float* input, const TileGeometry& g,
                                            std::int64_t tile, std::int64_t slot, float* v,
                                            std::int64_t position_stride) {
  constexpr int kAlpha = M + 2;
  const TilePosition p = locate(g, tile);
  const std::int64_t y0 = M * p.ty - g.pad_top, x0 = M * p.tx - g.pad_left;
  const std::int64_t c = g.in_channels;
  const float* image = input + p.image * g.height * g.width * c;
  // Which of the α×α input pixels lie inside the image (the rest are padding zeros).
  std::array<bool, kAlpha> row_in{}, col_in{};
  for (int k = 0; k < kAlpha; ++k) {
    row_in[static_cast<std::size_t>(k)] = y0 + k >= 0 && y0 + k < g.height;
    col_in[static_cast<std::size_t>(k)] = x0 + k >= 0 && x0 + k < g.width;
  }
  float* out = v + slot * c;
  for (std::int64_t ch = 0; ch < c; ch += 8) {
    __m256 d[kAlpha * kAlpha], t[kAlpha * kAlpha];
    for (int y = 0; y < kAlpha; ++y) {
      for (int x = 0; x < kAlpha; ++x) {
        const bool inside =
            row_in[static_cast<std::size_t>(y)] && col_in[static_cast<std::size_t>(x)];
        d[y * kAlpha + x] = inside ? _mm256_loadu_ps(image + ((y0 + y) * g.width + x0 + x) * c + ch)
                                   : _mm256_setzero_ps();
      }
    }
    for (int x = 0; x < kAlpha; ++x) input_1d<M>(d + x, kAlpha, t + x, kAlpha);          // Bᵀ d
    for (int y = 0; y < kAlpha; ++y) input_1d<M>(t + kAlpha * y, 1, d + kAlpha * y, 1);  // (Bᵀ d) B
    for (int xi = 0; xi < kAlpha * kAlpha; ++xi)
      _mm256_storeu_ps(out + xi * position_stride + ch, d[xi]);
  }
}

template <int M>
REFOLD_TARGET_AVX2 void transform_output_for(const float* m, std::int64_t position_stride,
                                             const TileGeometry& g, std::int64_t tile,
                                             std::int64_t slot, const Epilogue& epilogue,
                                             float* out) {
  constexpr int kAlpha = M + 2;
  const TilePosition p = locate(g, tile);
  const std::int64_t c = g.out_channels;
  const std::int64_t oy = M * p.ty, ox = M * p.tx;
  const std::int64_t rows = std::min<std::int64_t>(M, g.out_h - oy);
  const std::int64_t cols = std::min<std::int64_t>(M, g.out_w - ox);
  const std::int64_t image_offset = p.image * g.out_h * g.out_w * c;
  const float* in = m + slot * c;
  for (std::int64_t ch = 0; ch < c; ch += 8) {
    __m256 s[kAlpha * kAlpha], t[M * kAlpha], y[M * M];
    for (int xi = 0; xi < kAlpha * kAlpha; ++xi)
      s[xi] = _mm256_loadu_ps(in + xi * position_stride + ch);
    for (int x = 0; x < kAlpha; ++x) output_1d<M>(s + x, kAlpha, t + x, kAlpha);  // Aᵀ M
    for (int r = 0; r < M; ++r) output_1d<M>(t + kAlpha * r, 1, y + M * r, 1);    // (Aᵀ M) A
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t q = 0; q < cols; ++q) {
        const std::int64_t at = image_offset + ((oy + r) * g.out_w + ox + q) * c + ch;
        _mm256_storeu_ps(out + at, finish(y[r * M + q], epilogue, ch, at));
      }
    }
  }
}

}  // namespace

void transform_input(const float* input, const TileGeometry& g, std::int64_t tile,
                     std::int64_t slot, float* v, std::int64_t position_stride) {
  if (g.tile == WinogradTile::F2x2) {
    transform_input_for<2>(input, g, tile, slot, v, position_stride);
  } else {
    transform_input_for<4>(input, g, tile, slot, v, position_stride);
  }
}

void transform_output(const float* m, std::int64_t position_stride, const TileGeometry& g,
                      std::int64_t tile, std::int64_t slot, const Epilogue& epilogue, float* out) {
  if (g.tile == WinogradTile::F2x2) {
    transform_output_for<2>(m, position_stride, g, tile, slot, epilogue, out);
  } else {
    transform_output_for<4>(m, position_stride, g, tile, slot, epilogue, out);
  }
}

#else

void transform_input(const float*, const TileGeometry&, std::int64_t, std::int64_t, float*,
                     std::int64_t) {}
void transform_output(const float*, std::int64_t, const TileGeometry&, std::int64_t, std::int64_t,
                      const Epilogue&, float*) {}

#endif

}  // namespace refold::native
