// micro_kernel.h: the 6×32 AVX-512 micro-kernel (and its 6×8…6×24 forms for a layer's last
// output channels).
#include "kernels/native/micro_kernel.h"

namespace refold::native::detail {

#if REFOLD_HAVE_X86_KERNELS
namespace {

// B's vector v of width W (8…32 columns): 16 lanes, or the 8 of an 8-wide block (the others
// zero; a masked load reads nothing past them).
template <int W, int V>
REFOLD_TARGET_AVX512 inline __m512 load_b(const float* b) {
  constexpr int lanes = V == 0 ? (W < 16 ? W : 16) : W - 16;
  if constexpr (lanes == 16) {
    return _mm512_loadu_ps(b);
  } else {
    return _mm512_maskz_loadu_ps(__mmask16{0x00FF}, b);
  }
}

// Half h of a vector. The zero-masked extract, not _mm512_castps512_ps256: GCC 12 warns that
// the cast's undefined upper half may be used uninitialized.
REFOLD_TARGET_AVX512 inline __m256 half(__m512 v, int h) {
  return h == 0 ? _mm512_maskz_extractf32x8_ps(0xFF, v, 0)
                : _mm512_maskz_extractf32x8_ps(0xFF, v, 1);
}

// Row r, vector v: 16 (or 8) output channels from column 16·v, as is or through the epilogue
// (epilogue.h, 8 lanes at a time: the epilogue runs once per output, off the hot loop).
template <int W, int V>
REFOLD_TARGET_AVX512 inline void store(const Panel& p, std::int64_t r, __m512 acc) {
  constexpr int lanes = V == 0 ? (W < 16 ? W : 16) : W - 16;
  const std::int64_t offset = r * p.ldc + 16 * V;
  if (p.epilogue == nullptr) {
    if constexpr (lanes == 16) {
      _mm512_storeu_ps(p.c + offset, acc);
    } else {
      _mm256_storeu_ps(p.c + offset, half(acc, 0));
    }
    return;
  }
  const Epilogue& e = *p.epilogue;
  _mm256_storeu_ps(p.c + offset, finish(half(acc, 0), e, p.channel + 16 * V, p.c_offset + offset));
  if constexpr (lanes == 16) {
    _mm256_storeu_ps(p.c + offset + 8,
                     finish(half(acc, 1), e, p.channel + 16 * V + 8, p.c_offset + offset + 8));
  }
}

// R ≤ 6 rows, W ∈ {8, 16, 24, 32} columns: one or two vectors per row. Named accumulators, as in
// the AVX2 kernel (an array of vectors is stored to the stack on every iteration).
template <int R, int W>
REFOLD_TARGET_AVX512 void micro_kernel(const Panel& p) {
  constexpr bool two = W > 16;
  constexpr std::int64_t first_width = W < 16 ? W : 16, second_width = two ? W - 16 : 0;
  __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m512 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float* second_block = p.b + detail::block_taps(p) * p.depth * kBlockWidth;  // when two
  for (std::int64_t t = 0; t < p.taps; ++t) {
    const std::int64_t tap = detail::tap_id(p, t);
    const float* b0p = p.b + tap * p.depth * first_width;
    const float* b1p = second_block + tap * p.depth * second_width;
    const float* const* rows = p.a + t * kPanelRows;
    const float* a0 = rows[0] + p.a_offset;
    const float* a1 = R > 1 ? rows[1] + p.a_offset : a0;
    const float* a2 = R > 2 ? rows[2] + p.a_offset : a0;
    const float* a3 = R > 3 ? rows[3] + p.a_offset : a0;
    const float* a4 = R > 4 ? rows[4] + p.a_offset : a0;
    const float* a5 = R > 5 ? rows[5] + p.a_offset : a0;
    for (std::int64_t k = 0; k < p.depth; ++k, b0p += first_width, b1p += second_width) {
      const __m512 b0 = load_b<W, 0>(b0p);
      const __m512 b1 = two ? load_b<W, 1>(b1p) : b0;
#define REFOLD_ROW(r)                                              \
  if constexpr (R > r) {                                           \
    const __m512 av = _mm512_set1_ps(a##r[k]);                     \
    c##r##0 = _mm512_fmadd_ps(av, b0, c##r##0);                    \
    if constexpr (two) c##r##1 = _mm512_fmadd_ps(av, b1, c##r##1); \
  }
      REFOLD_ROW(0)
      REFOLD_ROW(1)
      REFOLD_ROW(2)
      REFOLD_ROW(3)
      REFOLD_ROW(4)
      REFOLD_ROW(5)
#undef REFOLD_ROW
    }
  }
#define REFOLD_STORE(r)                            \
  if constexpr (R > r) {                           \
    store<W, 0>(p, r, c##r##0);                    \
    if constexpr (two) store<W, 1>(p, r, c##r##1); \
  }
  REFOLD_STORE(0)
  REFOLD_STORE(1)
  REFOLD_STORE(2)
  REFOLD_STORE(3)
  REFOLD_STORE(4)
  REFOLD_STORE(5)
#undef REFOLD_STORE
}

// The kernel for p.rows (1…6).
template <int W>
void dispatch_rows(const Panel& p) {
  static constexpr RowKernel kByRows[kPanelRows] = {micro_kernel<1, W>, micro_kernel<2, W>,
                                                    micro_kernel<3, W>, micro_kernel<4, W>,
                                                    micro_kernel<5, W>, micro_kernel<6, W>};
  kByRows[p.rows - 1](p);
}

}  // namespace

void multiply_panel_avx512(const Panel& p) {
  switch (p.width) {
    case 32:
      dispatch_rows<32>(p);
      break;
    case 24:
      dispatch_rows<24>(p);
      break;
    case 16:
      dispatch_rows<16>(p);
      break;
    case 8:
      dispatch_rows<8>(p);
      break;
    default:
      break;
  }
}

#else

void multiply_panel_avx512(const Panel&) {}

#endif

}  // namespace refold::native::detail
