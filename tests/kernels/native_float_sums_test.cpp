// native::sum, squared_deviation_sum and abs_sum (src/kernels/native/float_sums.cpp), the row
// statistics of the native normalizations, reductions and L2Normalize, and their column forms
// add_columns, add_abs_columns and add_squared_deviation_columns, against sums in long double:
// lengths around the vector width and the float blocks, and a million values;
// data far from zero (a mean of 1000 and a spread of 1, where the squared deviations cancel
// nothing). Each sum must be within 1e-6 of the sum of its terms' magnitudes.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native/float_sums.h"
#include "refold/tensor.h"

namespace refold {
namespace {

TEST(NativeFloatSums, RowSumsMatchLongDoubleSums) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  Generator gen(46);
  for (const double offset : {0.0, 1000.0}) {
    for (const std::int64_t n : {1, 7, 8, 15, 16, 63, 64, 65, 127, 128, 200, 768, 1000000}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " offset " << offset);
      std::vector<float> x(static_cast<std::size_t>(n));
      for (float& v : x) v = static_cast<float>(offset + 2.0 * gen.uniform() - 1.0);
      long double sum = 0, magnitude = 0;
      for (const float v : x) {
        sum += v;
        magnitude += std::fabs(v);
      }
      const long double mean = sum / n;
      long double squares = 0;
      for (const float v : x) squares += (v - mean) * (v - mean);
      const auto close = [](double actual, long double exact, long double scale) {
        return std::fabs(static_cast<long double>(actual) - exact) <= 1e-6L * scale;
      };
      EXPECT_TRUE(close(native::sum(x.data(), n), sum, magnitude));
      EXPECT_TRUE(close(native::abs_sum(x.data(), n), magnitude, magnitude));
      EXPECT_TRUE(close(native::squared_deviation_sum(x.data(), n, static_cast<double>(mean)),
                        squares, squares));
    }
  }
}

// Columns: widths around the 8-column vector (its scalar tail included), row counts around the
// 4-row float block, a row stride wider than the width, and totals added to what acc held.
TEST(NativeFloatSums, ColumnSumsMatchLongDoubleSums) {
  if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  Generator gen(47);
  for (const double offset : {0.0, 1000.0}) {
    for (const std::int64_t width : {1, 7, 8, 13, 64}) {
      for (const std::int64_t rows : {1, 3, 4, 5, 196, 100000}) {
        SCOPED_TRACE(testing::Message()
                     << "width " << width << " rows " << rows << " offset " << offset);
        const std::int64_t stride = width + 3;
        std::vector<float> x(static_cast<std::size_t>(rows * stride));
        for (float& v : x) v = static_cast<float>(offset + 2.0 * gen.uniform() - 1.0);
        const auto at = [&](std::int64_t r, std::int64_t j) {
          return static_cast<long double>(x[static_cast<std::size_t>(r * stride + j)]);
        };
        std::vector<double> sums(static_cast<std::size_t>(width), 0.5);
        std::vector<double> abs(static_cast<std::size_t>(width), 0.5);
        std::vector<double> squares(static_cast<std::size_t>(width), 0.5);
        std::vector<double> means(static_cast<std::size_t>(width));
        for (std::int64_t j = 0; j < width; ++j) {
          long double sum = 0;
          for (std::int64_t r = 0; r < rows; ++r) sum += at(r, j);
          means[static_cast<std::size_t>(j)] = static_cast<double>(sum / rows);
        }
        native::add_columns(x.data(), rows, width, stride, sums.data());
        native::add_abs_columns(x.data(), rows, width, stride, abs.data());
        native::add_squared_deviation_columns(x.data(), rows, width, stride, means.data(),
                                              squares.data());
        for (std::int64_t j = 0; j < width; ++j) {
          const auto k = static_cast<std::size_t>(j);
          long double sum = 0.5L, magnitude = 0.5L, square = 0.5L;
          for (std::int64_t r = 0; r < rows; ++r) {
            const long double d = at(r, j) - means[k];
            sum += at(r, j);
            magnitude += std::fabs(at(r, j));
            square += d * d;
          }
          EXPECT_LE(std::fabs(sums[k] - sum), 1e-6L * magnitude) << j;
          EXPECT_LE(std::fabs(abs[k] - magnitude), 1e-6L * magnitude) << j;
          EXPECT_LE(std::fabs(squares[k] - square), 1e-6L * square) << j;
        }
      }
    }
  }
}

}  // namespace
}  // namespace refold
