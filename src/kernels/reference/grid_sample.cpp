// Reference GridSample (tensor_ops.h has the math). Per output point, each spatial axis gets its
// neighbours and weights once; the channels then reuse them.
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::reference {
namespace {

// Reflects x into [lo, hi] by the nearer border, repeatedly (ONNX's reference `_gs_reflect`).
double reflect(double x, double lo, double hi) {
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
std::array<double, 4> cubic_weights(double t) {
  constexpr double a = -0.75;
  auto near = [](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| ≤ 1
  auto far = [](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  return {far(t + 1), near(t), near(1 - t), far(2 - t)};
}

struct Tap {
  std::int64_t index = 0;  // −1: reads zero (padding zeros)
  double weight = 0;
};

// The neighbours of normalized coordinate g along an axis of `size` elements.
std::vector<Tap> axis_taps(double g, std::int64_t size, const GridSampleParams& p) {
  const auto d = static_cast<double>(size);
  double x = p.align_corners ? (g + 1) / 2 * (d - 1) : ((g + 1) * d - 1) / 2;
  const double lo = p.align_corners ? 0.0 : -0.5;
  const double hi = p.align_corners ? d - 1 : d - 0.5;
  if (p.mode == GridSampleMode::Nearest) x = std::nearbyint(x);  // half to even
  if (x < lo || x > hi) {
    if (p.padding == GridSamplePadding::Border) x = std::clamp(x, 0.0, d - 1);
    if (p.padding == GridSamplePadding::Reflection) x = reflect(x, lo, hi);
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
            static_cast<std::int64_t>(reflect(static_cast<double>(i), lo, hi)), 0, size - 1);
    }
    return -1;
  };
  const double f = std::floor(x);
  const auto i0 = static_cast<std::int64_t>(f);
  const double t = x - f;
  switch (p.mode) {
    case GridSampleMode::Nearest:
      return {{element(static_cast<std::int64_t>(x)), 1.0}};
    case GridSampleMode::Linear:
      return {{element(i0), 1 - t}, {element(i0 + 1), t}};
    case GridSampleMode::Cubic: {
      const std::array<double, 4> w = cubic_weights(t);
      return {{element(i0 - 1), w[0]},
              {element(i0), w[1]},
              {element(i0 + 1), w[2]},
              {element(i0 + 2), w[3]}};
    }
  }
  return {};
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleParams& params) {
  REFOLD_CHECK(input.defined() && grid.defined(), "grid_sample: X and grid are required");
  REFOLD_CHECK(is_floating(input.dtype()) && is_floating(grid.dtype()),
               "grid_sample: X and grid must be floating point");
  const std::int64_t rank = input.dim();
  const std::int64_t r = rank - 2;
  REFOLD_CHECK(r >= 1, "grid_sample: X must be [N, C, D1, …], got [{}]",
               fmt::join(input.sizes(), ", "));
  REFOLD_CHECK(grid.dim() == rank && grid.size(0) == input.size(0) && grid.size(-1) == r,
               "grid_sample: grid must be [N, O1, …, O{}, {}] for X [{}], got [{}]", r, r,
               fmt::join(input.sizes(), ", "), fmt::join(grid.sizes(), ", "));
  REFOLD_CHECK(params.mode != GridSampleMode::Cubic || r == 2,
               "grid_sample: cubic mode needs a 4-d X, got {}-d", rank);
  const Tensor x = input.to(DType::Float32).contiguous();
  const Tensor g = grid.to(DType::Float32).contiguous();
  const std::int64_t n_count = input.size(0), channels = input.size(1);
  Shape out_sizes{n_count, channels};
  std::int64_t points = 1, plane = 1;
  for (std::int64_t k = 0; k < r; ++k) {
    out_sizes.push_back(grid.size(1 + k));
    points *= grid.size(1 + k);
    plane *= input.size(2 + k);
  }
  Tensor out = empty(out_sizes, DType::Float32);
  const float* xs = x.data<float>();
  const float* gs = g.data<float>();
  float* ys = out.data<float>();
  // Element strides of the spatial axes in one [D1…Dr] plane.
  std::vector<std::int64_t> stride(static_cast<std::size_t>(r), 1);
  for (std::int64_t k = r - 2; k >= 0; --k)
    stride[static_cast<std::size_t>(k)] =
        stride[static_cast<std::size_t>(k + 1)] * input.size(3 + k);
  std::vector<std::vector<Tap>> taps(static_cast<std::size_t>(r));
  // (offset in a plane or −1, weight) of every neighbour combination, built axis by axis in
  // two buffers reused across points.
  std::vector<std::pair<std::int64_t, double>> combined, next;
  for (std::int64_t n = 0; n < n_count; ++n) {
    for (std::int64_t o = 0; o < points; ++o) {
      const float* coords = gs + (n * points + o) * r;
      for (std::int64_t k = 0; k < r; ++k)  // the grid lists x (the last axis) first
        taps[static_cast<std::size_t>(k)] = axis_taps(coords[r - 1 - k], input.size(2 + k), params);
      // Every combination of one neighbour per axis: offset and product of weights.
      combined.assign(1, {0, 1.0});
      for (std::int64_t k = 0; k < r; ++k) {
        next.clear();
        for (const auto& [offset, weight] : combined)
          for (const Tap& t : taps[static_cast<std::size_t>(k)])
            next.emplace_back(offset < 0 || t.index < 0
                                  ? -1
                                  : offset + t.index * stride[static_cast<std::size_t>(k)],
                              weight * t.weight);
        combined.swap(next);
      }
      for (std::int64_t c = 0; c < channels; ++c) {
        const float* p = xs + (n * channels + c) * plane;
        double sum = 0;
        for (const auto& [offset, weight] : combined)
          if (offset >= 0) sum += weight * static_cast<double>(p[offset]);
        ys[(n * channels + c) * points + o] = static_cast<float>(sum);
      }
    }
  }
  return out.to(input.dtype());
}

}  // namespace refold::reference
