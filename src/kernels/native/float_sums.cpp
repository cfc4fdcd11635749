#include "kernels/native/float_sums.h"

#include <cmath>

#include "kernels/native/vector_math.h"

namespace refold::native {
namespace {

// The 8 floats at x as two vectors of doubles.
struct Doubles {
  __m256d low, high;
};
REFOLD_TARGET_AVX2 inline Doubles widened(__m256 v) {
  return {_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))};
}
REFOLD_TARGET_AVX2 inline Doubles load_doubles(const float* x) {
  return widened(_mm256_loadu_ps(x));
}

// total += v, widened.
REFOLD_TARGET_AVX2 inline void add_widened(Doubles& total, __m256 v) {
  const Doubles d = widened(v);
  total.low = _mm256_add_pd(total.low, d.low);
  total.high = _mm256_add_pd(total.high, d.high);
}

// What a sum adds up: v, (v − center)², or |v|.
enum class Term { Value, Square, Abs };

REFOLD_TARGET_AVX2 inline __m256d absolute(__m256d v) {
  return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
}

// f(v) of 8 floats, added to acc.
template <Term term>
REFOLD_TARGET_AVX2 inline __m256 accumulate(__m256 acc, __m256 v, __m256 center) {
  if constexpr (term == Term::Square) {
    v = _mm256_sub_ps(v, center);
    return _mm256_fmadd_ps(v, v, acc);
  } else if constexpr (term == Term::Abs) {
    return _mm256_add_ps(acc, _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v));
  } else {
    return _mm256_add_ps(acc, v);
  }
}

// Σ f(x[i]) for the term f: f summed in float over blocks of 64 values (two chains of 8 lanes,
// each lane adding 4 values), each block's lane sums then added in double; the last n mod 8
// values in double. Float's speed — no widening per value, which with the chains of double
// adds held a 128-float LayerNorm row to 86 ns, 1.6× oneDNN's (bench/layer_norm_bench.cpp) —
// and double's sum across blocks: a block's rounding is that of 4 float additions per lane.
template <Term term>
REFOLD_TARGET_AVX2 double row_sum(const float* x, std::int64_t n, double center_in) {
  // One center for every term, the float one: Σ(x − c′)² = Σ(x − c)² + n·(c − c′)² when c is
  // the mean, so rounding c costs nothing a sum can see (mixing c and c′ would cost
  // 2·(c − c′)·Σ(x − c) over the float part alone).
  const auto center = static_cast<double>(static_cast<float>(center_in));
  const __m256 c = _mm256_set1_ps(static_cast<float>(center));
  Doubles total = {_mm256_setzero_pd(), _mm256_setzero_pd()};
  std::int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    for (std::int64_t k = i; k < i + 64; k += 16) {
      a0 = accumulate<term>(a0, _mm256_loadu_ps(x + k), c);
      a1 = accumulate<term>(a1, _mm256_loadu_ps(x + k + 8), c);
    }
    add_widened(total, _mm256_add_ps(a0, a1));
  }
  if (i + 8 <= n) {
    __m256 a = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) a = accumulate<term>(a, _mm256_loadu_ps(x + i), c);
    add_widened(total, a);
  }
  double sum = horizontal_sum(_mm256_add_pd(total.low, total.high));
  for (; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - (term == Term::Square ? center : 0.0);
    sum += term == Term::Square ? d * d : term == Term::Abs ? std::abs(d) : d;
  }
  return sum;
}

// f(v) of 4 doubles, added to acc.
template <Term term>
REFOLD_TARGET_AVX2 inline __m256d accumulate(__m256d acc, __m256d v, __m256d center) {
  if constexpr (term == Term::Square) {
    v = _mm256_sub_pd(v, center);
    return _mm256_fmadd_pd(v, v, acc);
  } else if constexpr (term == Term::Abs) {
    return _mm256_add_pd(acc, absolute(v));
  } else {
    return _mm256_add_pd(acc, v);
  }
}

// Columns j..j+3's centers, for squares (the other sums have none: center is null, and
// no offset may be applied to it).
template <Term term>
REFOLD_TARGET_AVX2 inline __m256d centers(const double* center, std::int64_t j) {
  if constexpr (term == Term::Square) return _mm256_loadu_pd(center + j);
  return _mm256_setzero_pd();
}

template <Term term>
REFOLD_TARGET_AVX2 void column_sums(const float* x, std::int64_t rows, std::int64_t width,
                                    std::int64_t row_stride, const double* center, double* acc) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * row_stride;
    std::int64_t j = 0;
    for (; j + 8 <= width; j += 8) {
      const Doubles d = load_doubles(row + j);
      _mm256_storeu_pd(acc + j,
                       accumulate<term>(_mm256_loadu_pd(acc + j), d.low, centers<term>(center, j)));
      _mm256_storeu_pd(acc + j + 4, accumulate<term>(_mm256_loadu_pd(acc + j + 4), d.high,
                                                     centers<term>(center, j + 4)));
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
