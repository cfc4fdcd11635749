#include "kernels/native/layer_norm.h"

#include <cmath>

#include "kernels/native/bfloat16_boundary.h"
#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/float_sums.h"
#include "kernels/native/row_threads.h"
#include "kernels/native/vector_math.h"

namespace refold::native {
namespace {

// The row as float32 values, one per row element: contiguous and of numel `length`.
bool is_row(const Tensor& t, std::int64_t length) {
  return t.dtype() == DType::Float32 && t.numel() == length && t.is_contiguous();
}

Tensor decline(std::string reason, std::string* declined) {
  return native::decline("LayerNormalization", std::move(reason), declined);
}

#if REFOLD_HAVE_X86_KERNELS
// dst[i] = (row[i] − mean)·inv_std·γ[i] (+ β[i]), 8 lanes and a masked tail: the rows are short
// (ConvNeXt's and EdgeNeXt's channels, 24 to 320), so a scalar or 4-lane loop was most of the
// row's time.
REFOLD_TARGET_AVX2 inline __m256 normalized(__m256 x, __m256 mean, __m256 inv_std, __m256 gamma,
                                            __m256 beta) {
  return _mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_sub_ps(x, mean), inv_std), gamma), beta);
}

REFOLD_TARGET_AVX2 void normalize_row(const float* row, const float* gamma, const float* beta,
                                      float* dst, std::int64_t n, float mean, float inv_std) {
  const __m256 m = _mm256_set1_ps(mean), s = _mm256_set1_ps(inv_std);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 b = beta != nullptr ? _mm256_loadu_ps(beta + i) : _mm256_setzero_ps();
    _mm256_storeu_ps(dst + i,
                     normalized(_mm256_loadu_ps(row + i), m, s, _mm256_loadu_ps(gamma + i), b));
  }
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    const __m256 b = beta != nullptr ? _mm256_maskload_ps(beta + i, mask) : _mm256_setzero_ps();
    _mm256_maskstore_ps(dst + i, mask,
                        normalized(_mm256_maskload_ps(row + i, mask), m, s,
                                   _mm256_maskload_ps(gamma + i, mask), b));
  }
}
#endif

}  // namespace

Tensor layer_norm_rows(const Tensor& x, const Tensor& scale, const Tensor& bias, std::int64_t axis,
                       double epsilon, std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline("the CPU lacks AVX2/FMA", declined);
  if (!x.defined() || !scale.defined() || x.dim() == 0)
    return decline("an undefined or 0-d input", declined);
  const std::int64_t rank = x.dim();
  if (axis < -rank || axis >= rank) return decline("axis out of range", declined);
  const std::int64_t first = axis < 0 ? axis + rank : axis;
  std::int64_t length = 1;
  for (std::int64_t d = first; d < rank; ++d) length *= x.size(d);
  if (x.dtype() == DType::BFloat16)
    return rounded(
        layer_norm_rows(widened(x), widened(scale), widened(bias), axis, epsilon, declined));
  if (x.dtype() != DType::Float32) return decline("not float32", declined);
  if (!x.is_contiguous()) return decline("X's normalized dims are not contiguous rows", declined);
  if (length == 0 || x.numel() == 0) return decline("no elements", declined);
  if (!is_row(scale, length) || (bias.defined() && !is_row(bias, length)))
    return decline("Scale or B is not one contiguous float32 value per element", declined);
  if (scale.dim() > rank - first || (bias.defined() && bias.dim() > rank - first))
    return decline("Scale or B has more dims than the normalized shape", declined);

  Tensor y = empty(x.sizes(), DType::Float32);
  const float* in = x.data<float>();
  const float* gamma = scale.data<float>();
  const float* beta = bias.defined() ? bias.data<float>() : nullptr;
  float* out = y.data<float>();
  const std::int64_t rows = x.numel() / length;
  const int threads = row_kernel_threads(x.numel());
  // Per row: μ = Σx / D, σ² = Σ(x − μ)² / D (float_sums.h), y = (x − μ)·(1/√(σ² + ε))·γ + β.
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && rows > 1)
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * length;
    float* dst = out + r * length;
    const double mean = sum(row, length) / static_cast<double>(length);
    const double variance = squared_deviation_sum(row, length, mean) / static_cast<double>(length);
    const auto inv_std = static_cast<float>(1.0 / std::sqrt(variance + epsilon));
#if REFOLD_HAVE_X86_KERNELS
    normalize_row(row, gamma, beta, dst, length, static_cast<float>(mean), inv_std);
#endif
  }
  return y;
}

}  // namespace refold::native
