// Sums of float32 data accumulated in double (AVX2), the statistics of the native
// normalizations and reductions: the reference kernels sum in double, so these match them to
// rounding. Rows are read along their contiguous dimension ("horizontal", one sum per row) or
// across rows (`width` contiguous values of `rows` rows `row_stride` apart: one sum per column).
// Callers check cpu_has_avx2_fma() first.
#pragma once

#include <cstdint>

namespace refold::native {

// Σ x[i], i < n.
double sum(const float* x, std::int64_t n);

// Σ (x[i] − mean)², i < n: the second pass of a two-pass variance.
double squared_deviation_sum(const float* x, std::int64_t n, double mean);

// Σ |x[i]|, i < n.
double abs_sum(const float* x, std::int64_t n);

// acc[j] += Σ_r x[r·row_stride + j], j < width, r < rows.
void add_columns(const float* x, std::int64_t rows, std::int64_t width, std::int64_t row_stride,
                 double* acc);

// acc[j] += Σ_r |x[r·row_stride + j]|.
void add_abs_columns(const float* x, std::int64_t rows, std::int64_t width, std::int64_t row_stride,
                     double* acc);

// acc[j] += Σ_r (x[r·row_stride + j] − center[j])².
void add_squared_deviation_columns(const float* x, std::int64_t rows, std::int64_t width,
                                   std::int64_t row_stride, const double* center, double* acc);

}  // namespace refold::native
