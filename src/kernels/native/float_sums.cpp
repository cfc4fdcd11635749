#include "kernels/native/float_sums.h"

#include <algorithm>
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

// total += v, widened.
REFOLD_TARGET_AVX2 inline void add_widened(Doubles& total, __m256 v) {
  const Doubles d = widened(v);
  total.low = _mm256_add_pd(total.low, d.low);
  total.high = _mm256_add_pd(total.high, d.high);
}

// What a sum adds up: v, (v − center)², or |v|.
enum class Term { Value, Square, Abs };

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

// Column sums in the rows' float blocks: for 8 columns at a time, f summed in float over blocks
// of up to 4 rows (each lane adds 4 values, as a row sum's lanes do), each block's 8 sums then
// added to the columns' double totals. Float's speed — a double total loaded, widened into and
// stored back once per 4 rows rather than per row — and double's sum across blocks. Squares
// use the float center throughout a column (see row_sum: Σ(x − c′)² is Σ(x − c)² + n·(c − c′)²
// at the mean c). The last width mod 8 columns are summed in double.
constexpr std::int64_t kColumnBlock = 4;

template <Term term>
REFOLD_TARGET_AVX2 void column_sums(const float* x, std::int64_t rows, std::int64_t width,
                                    std::int64_t row_stride, const double* center, double* acc) {
  const std::int64_t vector_width = width / 8 * 8;
  for (std::int64_t r = 0; r < rows; r += kColumnBlock) {
    const std::int64_t block = std::min(kColumnBlock, rows - r);
    const float* first = x + r * row_stride;
    for (std::int64_t j = 0; j < vector_width; j += 8) {
      __m256 c = _mm256_setzero_ps();
      if constexpr (term == Term::Square)
        c = _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(center + j + 4)),
                            _mm256_cvtpd_ps(_mm256_loadu_pd(center + j)));
      __m256 a = _mm256_setzero_ps();
      for (std::int64_t k = 0; k < block; ++k)
        a = accumulate<term>(a, _mm256_loadu_ps(first + k * row_stride + j), c);
      const Doubles d = widened(a);
      _mm256_storeu_pd(acc + j, _mm256_add_pd(_mm256_loadu_pd(acc + j), d.low));
      _mm256_storeu_pd(acc + j + 4, _mm256_add_pd(_mm256_loadu_pd(acc + j + 4), d.high));
    }
  }
  for (std::int64_t j = vector_width; j < width; ++j) {
    double total = 0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double v = x[r * row_stride + j];
      if constexpr (term == Term::Square)
        total += (v - center[j]) * (v - center[j]);
      else if constexpr (term == Term::Abs)
        total += std::abs(v);
      else
        total += v;
    }
    acc[j] += total;
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
