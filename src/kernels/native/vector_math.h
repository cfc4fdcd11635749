// AVX2 building blocks of the native row kernels (normalizations, reductions, softmax, the conv
// epilogue's sigmoid and GELU): tails (tail_mask.h), horizontal reductions, a vectorized exp and
// erf, and sigmoid, GELU and GELU's tanh form on them (also in AVX-512). Every function carries
// REFOLD_TARGET_AVX2 (or REFOLD_TARGET_AVX512); callers check cpu_has_avx2_fma() (or
// cpu_has_avx512()) first (kernels/native/cpu.h).
#pragma once

#include "kernels/native/cpu.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>

#include <cstdint>

#include "kernels/native/tail_mask.h"

namespace refold::native {

REFOLD_TARGET_AVX2 inline double horizontal_sum(__m256d v) {
  const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
}

REFOLD_TARGET_AVX2 inline float horizontal_sum(__m256 v) {
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}

REFOLD_TARGET_AVX2 inline float horizontal_max(__m256 v) {
  __m128 q = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  q = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
}

// e^x per lane, within 2 ulp of std::exp for x in [−87.3, 88.3] (tested): Cody–Waite reduction
//   x = n·ln2 + r,  n = round(x·log₂e),  r = x − n·ln2_hi − n·ln2_lo,  |r| ≤ ln2/2,
//   e^x = 2ⁿ · e^r,  e^r ≈ 1 + r + r²·P(r)  (Cephes expf's degree-5 P),
// 2ⁿ built in the exponent bits. x is clamped to [−87.33, 88.37]: below, the result is
// ≈ 1.2e−38 (FLT_MIN) instead of a subnormal or 0; above, ≈ 2.4e38 instead of a larger value or
// +inf (softmax's x − max ≤ 0 never gets there); NaN stays NaN. The 8-lane form here and the
// 16-lane one below compute the same operations.
namespace exp_constants {
inline constexpr float kLowest = -87.33654f, kHighest = 88.37f;
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
}  // namespace exp_constants

REFOLD_TARGET_AVX2 inline __m256 exp(__m256 x) {
  using namespace exp_constants;
  const __m256 clamped =
      _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kLowest)), _mm256_set1_ps(kHighest));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(clamped, _mm256_set1_ps(kLog2e)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), clamped);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // 2ⁿ, n in [−126, 127].
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  const __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(exponent));
  return _mm256_blendv_ps(y, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

// The same over 16 lanes (AVX-512): 2ⁿ by scalef. The zero-masked forms of min, max, roundscale
// and scalef with every lane selected, not the plain ones: GCC 12 warns that the plain ones'
// undefined pass-through operand may be used uninitialized.
REFOLD_TARGET_AVX512 inline __m512 exp(__m512 x) {
  using namespace exp_constants;
  constexpr __mmask16 all = 0xFFFF;
  const __m512 clamped = _mm512_maskz_min_ps(
      all, _mm512_maskz_max_ps(all, x, _mm512_set1_ps(kLowest)), _mm512_set1_ps(kHighest));
  const __m512 n = _mm512_maskz_roundscale_ps(all, _mm512_mul_ps(clamped, _mm512_set1_ps(kLog2e)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), clamped);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP[i]));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512 y = _mm512_maskz_scalef_ps(all, p, n);
  return _mm512_mask_mov_ps(y, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), x);
}

// erf(x) per lane: a rational minimax approximation on [−4, 4], x·P(x²)/Q(x²) with P of degree
// 6 and Q of degree 4 in x² (the coefficients Eigen's and XLA's float erf use); x is clamped to
// [−4, 4], where erf is ±1 to float precision. Max abs error 3.3e−7 over [−12, 12] against
// std::erf in double (tested); NaN stays NaN (max and min return their second operand, x, when
// it is NaN). The 8- and 16-lane forms compute the same operations.
namespace erf_constants {
inline constexpr float kClamp = 4.0f;
inline constexpr float kP[7] = {
    -2.72614225801306e-10f, 2.77068142495902e-08f,  -2.10102402082508e-06f, -5.69250639462346e-05f,
    -7.34990630326855e-04f, -2.95459980854025e-03f, -1.60960333262415e-02f};
inline constexpr float kQ[5] = {-1.45660718464996e-05f, -2.13374055278905e-04f,
                                -1.68282697438203e-03f, -7.37332916720468e-03f,
                                -1.42647390514189e-02f};
inline constexpr float kInvSqrt2 = 0.70710678118654752f;
}  // namespace erf_constants

REFOLD_TARGET_AVX2 inline __m256 erf(__m256 x) {
  using namespace erf_constants;
  const __m256 c = _mm256_min_ps(_mm256_set1_ps(kClamp), _mm256_max_ps(_mm256_set1_ps(-kClamp), x));
  const __m256 c2 = _mm256_mul_ps(c, c);
  __m256 p = _mm256_set1_ps(kP[0]);
  for (int i = 1; i < 7; ++i) p = _mm256_fmadd_ps(c2, p, _mm256_set1_ps(kP[i]));
  __m256 q = _mm256_set1_ps(kQ[0]);
  for (int i = 1; i < 5; ++i) q = _mm256_fmadd_ps(c2, q, _mm256_set1_ps(kQ[i]));
  return _mm256_div_ps(_mm256_mul_ps(c, p), q);
}

REFOLD_TARGET_AVX512 inline __m512 erf(__m512 x) {
  using namespace erf_constants;
  constexpr __mmask16 all = 0xFFFF;
  const __m512 c = _mm512_maskz_min_ps(all, _mm512_set1_ps(kClamp),
                                       _mm512_maskz_max_ps(all, _mm512_set1_ps(-kClamp), x));
  const __m512 c2 = _mm512_mul_ps(c, c);
  __m512 p = _mm512_set1_ps(kP[0]);
  for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(c2, p, _mm512_set1_ps(kP[i]));
  __m512 q = _mm512_set1_ps(kQ[0]);
  for (int i = 1; i < 5; ++i) q = _mm512_fmadd_ps(c2, q, _mm512_set1_ps(kQ[i]));
  return _mm512_div_ps(_mm512_mul_ps(c, p), q);
}

// GELU(x) = ½x·(1 + erf(x/√2)) per lane, through erf above: within 1.5e−6 of the exact value
// (the reference's float form, std::erf, within 4.5e−7).
REFOLD_TARGET_AVX2 inline __m256 gelu(__m256 x) {
  const __m256 e = erf(_mm256_mul_ps(x, _mm256_set1_ps(erf_constants::kInvSqrt2)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x),
                       _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

REFOLD_TARGET_AVX512 inline __m512 gelu(__m512 x) {
  const __m512 e = erf(_mm512_mul_ps(x, _mm512_set1_ps(erf_constants::kInvSqrt2)));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                       _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

// sigmoid(x) = 1 / (1 + e^−x) per lane, through exp above: 8 lanes by a division; 16 lanes by
// rcp14 refined by one Newton step, r ← r·(2 − d·r) (relative error ≈ 2^−28, a few ulp like the
// division). NaN stays NaN (e^−x keeps it, 1 + NaN and its reciprocal too).
REFOLD_TARGET_AVX2 inline __m256 sigmoid(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

REFOLD_TARGET_AVX512 inline __m512 sigmoid(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 d = _mm512_add_ps(one, exp(_mm512_sub_ps(_mm512_setzero_ps(), x)));
  const __m512 r = _mm512_maskz_rcp14_ps(0xFFFF, d);          // the masked form: see exp(__m512)
  return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(d, r, one), r);  // r·(2 − d·r)
}

// GELU's tanh form ½x·(1 + tanh(z)) = x·sigmoid(2z), z = √(2/π)·(x + 0.044715·x³), per lane:
// 2z = 2√(2/π)·x·(1 + 0.044715·x²); 8 lanes as x / (1 + e^−2z), 16 as x·sigmoid(2z).
namespace gelu_tanh_constants {
inline constexpr float kTwoSqrt2OverPi = 1.5957691216057308f, kCubic = 0.044715f;
}  // namespace gelu_tanh_constants

REFOLD_TARGET_AVX2 inline __m256 gelu_tanh(__m256 x) {
  using namespace gelu_tanh_constants;
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 inner = _mm256_fmadd_ps(_mm256_set1_ps(kCubic), _mm256_mul_ps(x, x), one);
  const __m256 two_z = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(kTwoSqrt2OverPi), x), inner);
  return _mm256_div_ps(x, _mm256_add_ps(one, exp(_mm256_sub_ps(_mm256_setzero_ps(), two_z))));
}

REFOLD_TARGET_AVX512 inline __m512 gelu_tanh(__m512 x) {
  using namespace gelu_tanh_constants;
  const __m512 inner =
      _mm512_fmadd_ps(_mm512_set1_ps(kCubic), _mm512_mul_ps(x, x), _mm512_set1_ps(1.0f));
  const __m512 two_z = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(kTwoSqrt2OverPi), x), inner);
  return _mm512_mul_ps(x, sigmoid(two_z));
}

}  // namespace refold::native

#endif
