// Reference GridSample (tensor_ops.h has the math). Per output point, each spatial axis gets its
// neighbours and weights once; the channels then reuse them.
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "kernels/reference/grid_sample_taps.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::reference {
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
  std::vector<detail::GridAxisTaps> taps(static_cast<std::size_t>(r));
  // (offset in a plane or −1, weight) of every neighbour combination, built axis by axis in
  // two buffers reused across points.
  std::vector<std::pair<std::int64_t, double>> combined, next;
  for (std::int64_t n = 0; n < n_count; ++n) {
    for (std::int64_t o = 0; o < points; ++o) {
      const float* coords = gs + (n * points + o) * r;
      for (std::int64_t k = 0; k < r; ++k)  // the grid lists x (the last axis) first
        taps[static_cast<std::size_t>(k)] =
            detail::grid_axis_taps(coords[r - 1 - k], input.size(2 + k), params);
      // Every combination of one neighbour per axis: offset and product of weights.
      combined.assign(1, {0, 1.0});
      for (std::int64_t k = 0; k < r; ++k) {
        next.clear();
        const detail::GridAxisTaps& axis = taps[static_cast<std::size_t>(k)];
        for (const auto& [offset, weight] : combined)
          for (int j = 0; j < axis.count; ++j) {
            const detail::GridTap& t = axis.taps[static_cast<std::size_t>(j)];
            next.emplace_back(offset < 0 || t.index < 0
                                  ? -1
                                  : offset + t.index * stride[static_cast<std::size_t>(k)],
                              weight * t.weight);
          }
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
