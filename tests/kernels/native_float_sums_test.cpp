// native::sum, squared_deviation_sum and abs_sum (src/kernels/native/float_sums.cpp), the row
// statistics of the native normalizations, reductions and L2Normalize, against sums in long
// double: lengths around the vector width and the 64-value float block, and a million values;
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

}  // namespace
}  // namespace refold
