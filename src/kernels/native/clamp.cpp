// native::clamp (clamp.h): one pass over dense float32, split in chunks across threads.
#include "kernels/native/clamp.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {
namespace {

// The scalar form of one element, for the tail: the same NaN rule (comparisons with NaN are
// false).
template <bool Affine>
float clamp_one(float x, float a, float b, float lo, float hi) {
  float v = Affine ? std::fma(a, x, b) : x;
  if (v < lo) v = lo;
  if (v > hi) v = hi;
  return v;
}

template <bool Affine>
REFOLD_TARGET_AVX2 void clamp_span(const float* x, float* y, std::int64_t n, float a, float b,
                                   float lo, float hi) {
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  const __m256 vlo = _mm256_set1_ps(lo), vhi = _mm256_set1_ps(hi);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    if constexpr (Affine) v = _mm256_fmadd_ps(va, v, vb);
    _mm256_storeu_ps(y + i, _mm256_min_ps(vhi, _mm256_max_ps(vlo, v)));
  }
  for (; i < n; ++i) y[i] = clamp_one<Affine>(x[i], a, b, lo, hi);
}

}  // namespace

Tensor clamp(const char* op, const Tensor& x, float a, float b, float lo, float hi,
             std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline(op, "this CPU has no AVX2/FMA", declined);
  if (x.dtype() != DType::Float32)
    return decline(op, fmt::format("dtype {}; only float32", dtype_name(x.dtype())), declined);
  if (!x.is_non_overlapping_and_dense())
    return decline(op, "input strides are not dense", declined);
  // The same strides as x: a dense layout is kept element for element, in memory order.
  Tensor y = empty_strided(x.sizes(), x.strides(), DType::Float32);
  const float* src = x.data<float>();
  float* dst = y.data<float>();
  const std::int64_t n = x.numel();
  const bool affine = a != 1.0f || b != 0.0f;
  constexpr std::int64_t kChunk = std::int64_t{1} << 14;
  const std::int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) num_threads(row_kernel_threads(n)) if (chunks > 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t start = c * kChunk, count = std::min(kChunk, n - start);
    if (affine)
      clamp_span<true>(src + start, dst + start, count, a, b, lo, hi);
    else
      clamp_span<false>(src + start, dst + start, count, a, b, lo, hi);
  }
  return y;
}

}  // namespace refold::native
