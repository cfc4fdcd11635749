#include "testing/compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

namespace refold::testing {

::testing::AssertionResult all_close(const Tensor& actual, const Tensor& expected,
                                     Tolerance tolerance) {
  if (actual.sizes() != expected.sizes())
    return ::testing::AssertionFailure()
           << fmt::format("sizes differ: actual [{}], expected [{}]",
                          fmt::join(actual.sizes(), ", "), fmt::join(expected.sizes(), ", "));
  const std::vector<float> a = actual.to_vector();
  const std::vector<float> e = expected.to_vector();
  std::size_t bad = 0, first_bad = a.size();
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const bool both_nan = std::isnan(a[i]) && std::isnan(e[i]);
    const double diff = std::fabs(static_cast<double>(a[i]) - e[i]);
    const bool ok = both_nan || (a[i] == e[i]) ||
                    diff <= tolerance.atol + tolerance.rtol * std::fabs(static_cast<double>(e[i]));
    if (!ok) {
      if (first_bad == a.size()) first_bad = i;
      ++bad;
    }
    if (!both_nan) worst = std::max(worst, std::isnan(diff) ? INFINITY : diff);
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << fmt::format(
             "{} of {} elements differ (atol {}, rtol {}); first at flat index {}: actual {}, "
             "expected {}; max |diff| {}",
             bad, a.size(), tolerance.atol, tolerance.rtol, first_bad, a[first_bad], e[first_bad],
             worst);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = a.to_vector(), y = b.to_vector();
  double worst = 0;
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(x[i]) - y[i]));
  return worst;
}

::testing::AssertionResult model_close(const Tensor& actual, const Tensor& expected) {
  if (actual.sizes() != expected.sizes()) return ::testing::AssertionFailure() << "sizes differ";
  double ref_max = 1;
  for (float v : expected.to_vector())
    ref_max = std::max(ref_max, std::fabs(static_cast<double>(v)));
  const double diff = max_abs_diff(actual, expected);
  if (diff <= 1e-4 * ref_max) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << fmt::format("max |diff| {} > 1e-4 · max(1, max|ref|) = {}", diff, 1e-4 * ref_max);
}

}  // namespace refold::testing
