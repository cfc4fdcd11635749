// Sums of float32 data (AVX2), the statistics of the native normalizations, reductions and
// L2Normalize. Rows are read along their contiguous dimension ("horizontal", one sum per row):
// in float over blocks of 64 values, each block's 8 lane sums added in double (float's speed,
// double's range across blocks; within 1e-6 of the exact sum of the terms' magnitudes, tested).
// Columns are read across rows (`width` contiguous values of `rows` rows `row_stride` apart: one
// sum per column), in float over blocks of 4 rows, each block added in double. The reference
// kernels sum in double, so both match them within Tolerance::op_f32. Callers check
// cpu_has_avx2_fma() first.
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
