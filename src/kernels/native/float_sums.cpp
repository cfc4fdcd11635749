#include "kernels/native/float_sums.h"

#include <cmath>

#include "kernels/native/vector_math.h"

namespace refold::native {
namespace {

// The 8 floats at x as two vectors of doubles.
struct Doubles {
  __m256d low, high;
};
REFOLD_TARGET_AVX2 inline Doubles load_doubles(const float* x) {
  const __m256 v = _mm256_loadu_ps(x);
  return {_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))};
}

// What a sum adds up: v, (v − center)², or |v|.
enum class Term { Value, Square, Abs };

REFOLD_TARGET_AVX2 inline __m256d absolute(__m256d v) {
  return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
}

// Σ f(x[i]) for the term f; two accumulators per 8 values, the last n mod 8 scalar.
template <Term term>
REFOLD_TARGET_AVX2 double row_sum(const float* x, std::int64_t n, double center) {
  const __m256d c = _mm256_set1_pd(center);
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    Doubles d = load_doubles(x + i);
    if constexpr (term == Term::Square) {
      d.low = _mm256_sub_pd(d.low, c);
      d.high = _mm256_sub_pd(d.high, c);
      a0 = _mm256_fmadd_pd(d.low, d.low, a0);
      a1 = _mm256_fmadd_pd(d.high, d.high, a1);
    } else if constexpr (term == Term::Abs) {
      a0 = _mm256_add_pd(a0, absolute(d.low));
      a1 = _mm256_add_pd(a1, absolute(d.high));
    } else {
      a0 = _mm256_add_pd(a0, d.low);
      a1 = _mm256_add_pd(a1, d.high);
    }
  }
  double total = horizontal_sum(_mm256_add_pd(a0, a1));
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - (term == Term::Square ? center : 0.0);
    total += term == Term::Square ? d * d : term == Term::Abs ? std::abs(d) : d;
  }
  return total;
}

template <Term term>
REFOLD_TARGET_AVX2 void column_sums(const float* x, std::int64_t rows, std::int64_t width,
                                    std::int64_t row_stride, const double* center, double* acc) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * row_stride;
    std::int64_t j = 0;
    for (; j + 8 <= width; j += 8) {
      Doubles d = load_doubles(row + j);
      if constexpr (term == Term::Square) {
        d.low = _mm256_sub_pd(d.low, _mm256_loadu_pd(center + j));
        d.high = _mm256_sub_pd(d.high, _mm256_loadu_pd(center + j + 4));
        _mm256_storeu_pd(acc + j, _mm256_fmadd_pd(d.low, d.low, _mm256_loadu_pd(acc + j)));
        _mm256_storeu_pd(acc + j + 4,
                         _mm256_fmadd_pd(d.high, d.high, _mm256_loadu_pd(acc + j + 4)));
      } else if constexpr (term == Term::Abs) {
        _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), absolute(d.low)));
        _mm256_storeu_pd(acc + j + 4,
                         _mm256_add_pd(_mm256_loadu_pd(acc + j + 4), absolute(d.high)));
      } else {
        _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), d.low));
        _mm256_storeu_pd(acc + j + 4, _mm256_add_pd(_mm256_loadu_pd(acc + j + 4), d.high));
      }
    }
    for (; j < width; ++j) {
      const double v = row[j];
      if constexpr (term == Term::Square)
        acc[j] += (v - center[j]) * (v - center[j]);
      else if constexpr (term == Term::Abs)
        acc[j] += std::abs(v);
      else
        acc[j] += v;
    }
  }
}

}  // namespace

double sum(const float* x, std::int64_t n) { return row_sum<Term::Value>(x, n, 0.0); }

double squared_deviation_sum(const float* x, std::int64_t n, double mean) {
  return row_sum<Term::Square>(x, n, mean);
}

void add_columns(const float* x, std::int64_t rows, std::int64_t width, std::int64_t row_stride,
                 double* acc) {
  column_sums<Term::Value>(x, rows, width, row_stride, nullptr, acc);
}

double abs_sum(const float* x, std::int64_t n) { return row_sum<Term::Abs>(x, n, 0.0); }

void add_abs_columns(const float* x, std::int64_t rows, std::int64_t width, std::int64_t row_stride,
                     double* acc) {
  column_sums<Term::Abs>(x, rows, width, row_stride, nullptr, acc);
}

void add_squared_deviation_columns(const float* x, std::int64_t rows, std::int64_t width,
                                   std::int64_t row_stride, const double* center, double* acc) {
  column_sums<Term::Square>(x, rows, width, row_stride, center, acc);
}

}  // namespace refold::native
