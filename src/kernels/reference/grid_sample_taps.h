// GridSample's per-axis neighbours (tensor_ops.h has the math), shared by the reference
// (grid_sample.cpp) and the native 2-d kernel (kernels/native/grid_sample.h), so both read the
// same elements with the same weights.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/reference/tensor_ops.h"

namespace refold::reference::detail {

struct GridTap {
  std::int64_t index = 0;  // −1: reads zero (padding zeros)
  double weight = 0;
};

struct GridAxisTaps {
  std::array<GridTap, 4> taps;
  int count = 0;
};

// Reflects x into [lo, hi] by the nearer border, repeatedly (ONNX's reference `_gs_reflect`).
inline double grid_reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x < lo) {
    const double d = lo - x;
    const auto n = static_cast<std::int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double d = x - hi;
    const auto n = static_cast<std::int64_t>(d / range);
    const double r = d - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

// Keys' cubic convolution weights for the neighbours ⌊x⌋ − 1 … ⌊x⌋ + 2, t = x − ⌊x⌋.
inline std::array<double, 4> grid_cubic_weights(double t) {
  constexpr double a = -0.75;
  return {keys_cubic(t + 1, a), keys_cubic(t, a), keys_cubic(1 - t, a), keys_cubic(2 - t, a)};
}

// The neighbours of normalized coordinate g along an axis of `size` elements: 1 (nearest),
// 2 (linear) or 4 (cubic), each under the padding rule. Inline: the native kernel finds them for
// every output point (out of line, they cost half its time).
inline GridAxisTaps grid_axis_taps(double g, std::int64_t size, const GridSampleParams& p) {
  const auto d = static_cast<double>(size);
  // A NaN coordinate gives NaN (one tap of weight NaN); an infinite or huge one is bounded so
  // that its floor fits an integer — past ±10^15 every neighbour reads the padding alike.
  if (std::isnan(g)) return {{{{0, std::numeric_limits<double>::quiet_NaN()}}}, 1};
  double x = p.align_corners ? (g + 1) / 2 * (d - 1) : ((g + 1) * d - 1) / 2;
  x = std::clamp(x, -1e15, 1e15);
  const double lo = p.align_corners ? 0.0 : -0.5;
  const double hi = p.align_corners ? d - 1 : d - 0.5;
  if (p.mode == GridSampleMode::Nearest) x = std::nearbyint(x);  // half to even
  if (x < lo || x > hi) {
    if (p.padding == GridSamplePadding::Border) x = std::clamp(x, 0.0, d - 1);
    if (p.padding == GridSamplePadding::Reflection) x = grid_reflect(x, lo, hi);
  }
  // A neighbour's element under the padding rule.
  auto element = [&](std::int64_t i) -> std::int64_t {
    if (i >= 0 && i < size) return i;
    switch (p.padding) {
      case GridSamplePadding::Zeros:
        return -1;
      case GridSamplePadding::Border:
        return std::clamp<std::int64_t>(i, 0, size - 1);
      case GridSamplePadding::Reflection:
        return std::clamp<std::int64_t>(
            static_cast<std::int64_t>(grid_reflect(static_cast<double>(i), lo, hi)), 0, size - 1);
    }
    return -1;
  };
  const double f = std::floor(x);
  const auto i0 = static_cast<std::int64_t>(f);
  const double t = x - f;
  switch (p.mode) {
    case GridSampleMode::Nearest:
      return {{{{element(static_cast<std::int64_t>(x)), 1.0}}}, 1};
    case GridSampleMode::Linear:
      return {{{{element(i0), 1 - t}, {element(i0 + 1), t}}}, 2};
    case GridSampleMode::Cubic: {
      const std::array<double, 4> w = grid_cubic_weights(t);
      return {{{{element(i0 - 1), w[0]},
                {element(i0), w[1]},
                {element(i0 + 1), w[2]},
                {element(i0 + 2), w[3]}}},
              4};
    }
  }
  return {};
}

}  // namespace refold::reference::detail
