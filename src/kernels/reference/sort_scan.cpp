// Reference TopK and CumSum along one axis, any strides (see tensor_ops.h): both walk every
// line of the tensor along the axis, the other dimensions fixed.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <type_traits>

#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace {

using detail::offset_in;

// Calls fn(input offset, output offset) for the start of every line along `axis` (the
// dimension's index 0), the other dimensions in row-major order.
template <typename Fn>
void for_each_line(const Shape& sizes, std::size_t axis, const Shape& in_strides,
                   const Shape& out_strides, Fn&& fn) {
  Shape lines = sizes;
  lines[axis] = 1;
  for_each_index(lines, [&](const Shape& idx) {
    fn(offset_in(idx, in_strides), offset_in(idx, out_strides));
  });
}

}  // namespace

TopKResult top_k(const Tensor& x, std::int64_t k, std::int64_t axis, bool largest) {
  REFOLD_CHECK(x.defined(), "top_k: X is undefined");
  REFOLD_CHECK(x.dim() > 0, "top_k: X is 0-d");
  const auto a = static_cast<std::size_t>(detail::wrap_axis(axis, x.dim(), "top_k"));
  const std::int64_t n = x.sizes()[a];
  REFOLD_CHECK(k >= 0 && k <= n, "top_k: k ({}) must be in [0, {}] (the size of axis {})", k, n,
               axis);
  Shape sizes = x.sizes();
  sizes[a] = k;
  TopKResult result{empty(sizes, x.dtype()), empty(sizes, DType::Int64)};
  if (result.values.numel() == 0) return result;
  const Shape& vs = result.values.strides();
  REFOLD_CHECK(vs == result.indices.strides(), "internal: top_k outputs differ in layout");
  const std::int64_t in_step = x.strides()[a], out_step = vs[a];
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  detail::visit_storage_type(x.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(x.data_ptr());
    T* values = static_cast<T*>(result.values.data_ptr());
    auto* indices = result.indices.data<std::int64_t>();
    std::vector<double> keys(static_cast<std::size_t>(n));
    std::vector<T> raw(static_cast<std::size_t>(n));
    for_each_line(x.sizes(), a, x.strides(), vs, [&](std::int64_t src, std::int64_t dst) {
      for (std::int64_t i = 0; i < n; ++i) {
        raw[static_cast<std::size_t>(i)] = in[src + i * in_step];
        if constexpr (std::is_same_v<T, std::int64_t>) {
          keys[static_cast<std::size_t>(i)] = 0;  // compared exactly below
        } else {
          keys[static_cast<std::size_t>(i)] = load_as_float(in, x.dtype(), src + i * in_step);
        }
      }
      // "a before b": the larger (smaller) first, NaN above every number, ties by index.
      auto before = [&](std::int64_t i, std::int64_t j) {
        const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
        if constexpr (std::is_same_v<T, std::int64_t>) {
          if (raw[ui] != raw[uj]) return largest ? raw[ui] > raw[uj] : raw[ui] < raw[uj];
        } else {
          const double vi = keys[ui], vj = keys[uj];
          const bool ni = std::isnan(vi), nj = std::isnan(vj);
          if (ni != nj) return largest ? ni : nj;
          if (!ni && vi != vj) return largest ? vi > vj : vi < vj;
        }
        return i < j;
      };
      std::iota(order.begin(), order.end(), 0);
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (std::int64_t j = 0; j < k; ++j) {
        const std::int64_t i = order[static_cast<std::size_t>(j)];
        values[dst + j * out_step] = raw[static_cast<std::size_t>(i)];
        indices[dst + j * out_step] = i;
      }
    });
  });
  return result;
}

Tensor cum_sum(const Tensor& x, std::int64_t axis, bool exclusive, bool reverse) {
  REFOLD_CHECK(x.defined(), "cum_sum: X is undefined");
  REFOLD_CHECK(x.dim() > 0, "cum_sum: X is 0-d");
  const auto a = static_cast<std::size_t>(detail::wrap_axis(axis, x.dim(), "cum_sum"));
  Tensor output = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  const std::int64_t n = x.sizes()[a];
  const std::int64_t in_step = x.strides()[a], out_step = output.strides()[a];
  const DType dtype = x.dtype();
  for_each_line(x.sizes(), a, x.strides(), output.strides(),
                [&](std::int64_t src, std::int64_t dst) {
                  std::uint64_t exact = 0;  // int64: wrapping two's complement
                  double sum = 0;
                  for (std::int64_t step = 0; step < n; ++step) {
                    const std::int64_t j = reverse ? n - 1 - step : step;
                    if (dtype == DType::Int64) {
                      const auto* in = x.data<std::int64_t>();
                      auto* out = output.data<std::int64_t>();
                      const auto v = static_cast<std::uint64_t>(in[src + j * in_step]);
                      if (!exclusive) exact += v;
                      out[dst + j * out_step] = static_cast<std::int64_t>(exact);
                      if (exclusive) exact += v;
                      continue;
                    }
                    const double v = load_as_float(x.data_ptr(), dtype, src + j * in_step);
                    if (!exclusive) sum += v;
                    store_from_float(output.data_ptr(), dtype, dst + j * out_step,
                                     round_to_dtype(sum, dtype));
                    if (exclusive) sum += v;
                  }
                });
  return output;
}

}  // namespace refold::reference
