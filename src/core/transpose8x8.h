// An 8 × 8 block of 4-byte elements transposed in AVX2 registers, for Tensor::copy_'s transpose
// tiles (core/tensor.cpp): d[r·d_stride + c] = s[c·s_stride + r] for r, c < 8. Eight source rows
// are loaded whole, transposed by the unpack / shuffle / 128-bit-permute network, and stored as
// eight destination rows: 24 shuffles where the scalar tile moves 64 elements one at a time.
// The elements are moved as bits (float, int32, any 4-byte type). Callers check
// cpu_has_avx2_fma() (core/cpu_features.h) first.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>
#endif

namespace refold::detail {

#if REFOLD_HAVE_X86_KERNELS
REFOLD_TARGET_AVX2 inline void transpose8x8(const void* src, std::int64_t s_stride, void* dst,
                                            std::int64_t d_stride) {
  const auto* s = static_cast<const float*>(src);
  auto* d = static_cast<float*>(dst);
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(s + i * s_stride);
  // Pairs of rows interleaved: t[2k] = (r2k[0], r2k+1[0], r2k[1], r2k+1[1] | lanes 4, 5), …
  for (int k = 0; k < 4; ++k) {
    t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
  }
  // Quads of rows: each 128-bit lane now holds one column of 4 consecutive rows.
  for (int k = 0; k < 2; ++k) {
    r[4 * k + 0] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // Rows 0–3 and 4–7 joined: the low lanes are columns 0–3, the high lanes columns 4–7.
  for (int c = 0; c < 4; ++c) {
    _mm256_storeu_ps(d + c * d_stride, _mm256_permute2f128_ps(r[c], r[4 + c], 0x20));
    _mm256_storeu_ps(d + (c + 4) * d_stride, _mm256_permute2f128_ps(r[c], r[4 + c], 0x31));
  }
}
#endif

}  // namespace refold::detail
