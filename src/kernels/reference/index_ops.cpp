// Reference gather, gather_elements, slice, scatter_nd and scatter_elements for any dtype: indices
// are int64 and checked, every element is a bit copy (see tensor_ops.h).
#include <algorithm>
#include <cmath>
#include <span>
#include <type_traits>

#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace {

using detail::offset_in;
using detail::visit_storage_type;

// An index in [−size, size) → [0, size).
std::int64_t wrap_index(std::int64_t index, std::int64_t size, const char* op, std::size_t axis) {
  REFOLD_CHECK(index >= -size && index < size, "{}: index {} out of range for axis {} of size {}",
               op, index, axis, size);
  return index < 0 ? index + size : index;
}

void check_indices(const Tensor& indices, const char* op) {
  REFOLD_CHECK(indices.defined(), "{}: indices are undefined", op);
  REFOLD_CHECK(indices.dtype() == DType::Int64, "{}: indices have dtype {}; expected int64", op,
               dtype_name(indices.dtype()));
}

}  // namespace

GatherIndices gather_indices(const Tensor& data, const Tensor& indices, std::int64_t axis) {
  REFOLD_CHECK(data.defined(), "gather: data is undefined");
  check_indices(indices, "gather");
  REFOLD_CHECK(data.dim() > 0, "gather: data is 0-d");
  GatherIndices g;
  g.axis = detail::wrap_axis(axis, data.dim(), "gather");
  const auto a = static_cast<std::size_t>(g.axis);
  g.values = detail::int64_values(indices);
  for (std::int64_t& i : g.values) i = wrap_index(i, data.sizes()[a], "gather", a);
  const Shape& ds = data.sizes();
  g.out_sizes.assign(ds.begin(), ds.begin() + static_cast<std::ptrdiff_t>(a));
  g.out_sizes.insert(g.out_sizes.end(), indices.sizes().begin(), indices.sizes().end());
  g.out_sizes.insert(g.out_sizes.end(), ds.begin() + static_cast<std::ptrdiff_t>(a) + 1, ds.end());
  return g;
}

Tensor gather(const Tensor& data, const Tensor& indices, std::int64_t axis) {
  // Every index is checked before the output is made.
  const GatherIndices g = gather_indices(data, indices, axis);
  const auto a = static_cast<std::size_t>(g.axis);
  const std::vector<std::int64_t>& idx_values = g.values;
  const Shape& ds = data.sizes();
  const Shape& sizes = g.out_sizes;
  Tensor output = empty(sizes, data.dtype());
  const std::size_t q = static_cast<std::size_t>(indices.dim());
  // Row-major position of the index part of an output index → its value in idx_values.
  const Shape idx_strides = contiguous_strides(indices.sizes());
  visit_storage_type(data.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(data.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    std::int64_t o = 0;
    for_each_index(sizes, [&](const Shape& oi) {
      std::int64_t src = 0, flat = 0;
      for (std::size_t d = 0; d < a; ++d) src += oi[d] * data.strides()[d];
      for (std::size_t k = 0; k < q; ++k) flat += oi[a + k] * idx_strides[k];
      src += idx_values[static_cast<std::size_t>(flat)] * data.strides()[a];
      for (std::size_t d = a + 1; d < ds.size(); ++d) src += oi[d - 1 + q] * data.strides()[d];
      out[o++] = in[src];
    });
  });
  return output;
}

SliceDim resolve_slice(std::int64_t start, std::int64_t end, std::int64_t step, std::int64_t size) {
  REFOLD_CHECK(step != 0, "slice: step must not be 0");
  if (size == 0) return {0, step, 0};  // nothing to take, whichever the direction
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (step > 0) {
    start = std::clamp<std::int64_t>(start, 0, size);
    end = std::clamp<std::int64_t>(end, 0, size);
  } else {
    start = std::clamp<std::int64_t>(start, 0, std::max<std::int64_t>(size - 1, 0));
    end = std::clamp<std::int64_t>(end, -1, size - 1);
  }
  // count = ceil((end − start) / step) when positive. |end − start| ≤ size + 1, no overflow;
  // a huge |step| is clamped first so the rounding addition cannot overflow.
  const std::int64_t span = end - start;
  const std::int64_t s = std::clamp<std::int64_t>(step, -(size + 2), size + 2);
  std::int64_t count = 0;
  if (s > 0 && span > 0) count = (span + s - 1) / s;
  if (s < 0 && span < 0) count = (-span + (-s) - 1) / (-s);
  return {start, step, count};
}

namespace {

// Where slice() reads: output element idx is data's element base + Σ idx[d]·strides[d].
struct SliceGeometry {
  Shape sizes, strides;
  std::int64_t base = 0;  // from data's first element
};

SliceGeometry slice_geometry(const Tensor& data, const std::vector<SliceDim>& dims) {
  REFOLD_CHECK(data.defined(), "slice: data is undefined");
  REFOLD_CHECK(static_cast<std::int64_t>(dims.size()) == data.dim(),
               "slice: {} dimensions given for a {}-d input", dims.size(), data.dim());
  SliceGeometry g{Shape(dims.size()), Shape(dims.size()), 0};
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const SliceDim& s = dims[d];
    REFOLD_CHECK(
        s.count >= 0 && (s.count == 0 || (s.start >= 0 && s.start < data.sizes()[d] &&
                                          s.start + (s.count - 1) * s.step >= 0 &&
                                          s.start + (s.count - 1) * s.step < data.sizes()[d])),
        "slice: start {} step {} count {} outside dimension {} of size {}", s.start, s.step,
        s.count, d, data.sizes()[d]);
    g.sizes[d] = s.count;
    // With one element the step is never taken (and may be huge: no overflow); the dim keeps
    // data's stride, so a view keeps the layout data's memory has (suggest_memory_format: a
    // channel slice of an NHWC batch of one is still channels_last).
    g.strides[d] = s.count > 1 ? s.step * data.strides()[d] : data.strides()[d];
    if (s.count > 0) g.base += s.start * data.strides()[d];
  }
  return g;
}

bool steps_positive(const std::vector<SliceDim>& dims) {
  return std::all_of(dims.begin(), dims.end(), [](const SliceDim& s) { return s.step > 0; });
}

// The elements at `g` as a view of data (positive steps: a view has no negative strides).
Tensor view_at(const Tensor& data, const SliceGeometry& g) {
  return data.as_strided(g.sizes, g.strides, data.storage_offset() + g.base);
}

}  // namespace

Tensor slice_view(const Tensor& data, const std::vector<SliceDim>& dims) {
  const SliceGeometry g = slice_geometry(data, dims);
  return steps_positive(dims) ? view_at(data, g) : Tensor();
}

Tensor slice(const Tensor& data, const std::vector<SliceDim>& dims) {
  const SliceGeometry g = slice_geometry(data, dims);
  const bool channels_last =
      data.dim() == 4 && data.suggest_memory_format() == MemoryFormat::ChannelsLast;
  Tensor output = empty(g.sizes, {data.dtype(), channels_last ? MemoryFormat::ChannelsLast
                                                              : MemoryFormat::Contiguous});
  if (steps_positive(dims)) {
    // A strided view of the input (step·stride per dimension), copied.
    output.copy_(view_at(data, g));
    return output;
  }
  visit_storage_type(data.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(data.data_ptr()) + g.base;
    T* out = static_cast<T*>(output.data_ptr());
    for_each_index(g.sizes, [&](const Shape& idx) {
      out[offset_in(idx, output.strides())] = in[offset_in(idx, g.strides)];
    });
  });
  return output;
}

// indices [i_0 … i_{q−2}, k]: each row of k entries addresses a slice data[j_0 … j_{k−1}, :…]
// of shape data.sizes[k:]; updates has shape indices.sizes[:−1] + data.sizes[k:].
void check_scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates) {
  REFOLD_CHECK(data.defined() && updates.defined(), "scatter_nd: data or updates is undefined");
  check_indices(indices, "scatter_nd");
  REFOLD_CHECK(updates.dtype() == data.dtype(), "scatter_nd: updates have dtype {} but data has {}",
               dtype_name(updates.dtype()), dtype_name(data.dtype()));
  REFOLD_CHECK(indices.dim() >= 1, "scatter_nd: indices must have rank ≥ 1, got 0-d");
  const std::int64_t k = indices.size(-1);
  const std::int64_t r = data.dim();
  REFOLD_CHECK(k <= r, "scatter_nd: indices' last dimension {} exceeds the data rank {}", k, r);
  const Shape& is = indices.sizes();
  Shape expected(is.begin(), is.end() - 1);
  expected.insert(expected.end(), data.sizes().begin() + k, data.sizes().end());
  REFOLD_CHECK(updates.sizes() == expected,
               "scatter_nd: updates have shape [{}]; expected [{}] (indices [{}], data [{}])",
               fmt::join(updates.sizes(), ", "), fmt::join(expected, ", "), fmt::join(is, ", "),
               fmt::join(data.sizes(), ", "));
}

std::vector<std::int64_t> scatter_nd_offsets(const Shape& data_sizes, const Shape& strides,
                                             const Tensor& indices) {
  const Shape& is = indices.sizes();
  const auto k = static_cast<std::size_t>(is.back());
  const auto rows =
      static_cast<std::size_t>(checked_numel(std::span(is).first(is.size() - 1), "scatter_nd"));
  const std::vector<std::int64_t> values = detail::int64_values(indices);
  std::vector<std::int64_t> offsets(rows, 0);
  for (std::size_t row = 0; row < rows; ++row)
    for (std::size_t j = 0; j < k; ++j)
      offsets[row] += wrap_index(values[row * k + j], data_sizes[j], "scatter_nd", j) * strides[j];
  return offsets;
}

Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates) {
  check_scatter_nd(data, indices, updates);
  const std::int64_t k = indices.size(-1);
  const Shape& is = indices.sizes();
  // Resolve every row of indices to an element offset of a contiguous output first.
  // A copy of data in data's layout (4-d channels_last stays so), then the updates.
  Tensor output =
      data.clone(data.dim() == 4 && data.suggest_memory_format() == MemoryFormat::ChannelsLast
                     ? MemoryFormat::ChannelsLast
                     : MemoryFormat::Contiguous);
  const Shape out_strides = output.strides();
  const std::vector<std::int64_t> row_offsets =
      scatter_nd_offsets(data.sizes(), out_strides, indices);
  const Shape slice_sizes(data.sizes().begin() + k, data.sizes().end());
  const Shape slice_strides(out_strides.begin() + k, out_strides.end());
  visit_storage_type(data.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(updates.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    const Shape& us = updates.strides();
    const std::size_t lead = is.size() - 1;
    std::size_t row = 0;
    Shape ui(us.size());
    for_each_index(Shape(is.begin(), is.end() - 1), [&](const Shape& ri) {
      std::copy(ri.begin(), ri.end(), ui.begin());
      for_each_index(slice_sizes, [&](const Shape& si) {
        std::copy(si.begin(), si.end(), ui.begin() + static_cast<std::ptrdiff_t>(lead));
        out[row_offsets[row] + offset_in(si, slice_strides)] = in[offset_in(ui, us)];
      });
      ++row;
    });
  });
  return output;
}

Tensor gather_nd(const Tensor& data, const Tensor& indices, std::int64_t batch_dims) {
  REFOLD_CHECK(data.defined(), "gather_nd: data is undefined");
  check_indices(indices, "gather_nd");
  const std::int64_t q = indices.dim();
  const std::int64_t r = data.dim();
  const std::int64_t b = batch_dims;
  REFOLD_CHECK(q >= 1 && b >= 0 && b < q && b < r,
               "gather_nd: batch_dims {} must be below the ranks of indices ({}) and data ({})", b,
               q, r);
  const std::int64_t k = indices.size(-1);
  REFOLD_CHECK(k >= 1 && k <= r - b,
               "gather_nd: indices' last dimension {} must be in [1, {}] (data rank {} − "
               "batch_dims {})",
               k, r - b, r, b);
  const Shape& is = indices.sizes();
  const Shape& ds = data.sizes();
  for (std::int64_t d = 0; d < b; ++d)
    REFOLD_CHECK(is[static_cast<std::size_t>(d)] == ds[static_cast<std::size_t>(d)],
                 "gather_nd: batch dim {} is {} in indices but {} in data", d,
                 is[static_cast<std::size_t>(d)], ds[static_cast<std::size_t>(d)]);
  const Shape rows(is.begin(), is.end() - 1);
  const Shape slice(ds.begin() + b + k, ds.end());
  Shape out_sizes = rows;
  out_sizes.insert(out_sizes.end(), slice.begin(), slice.end());
  Tensor output = empty(out_sizes, data.dtype());
  const std::vector<std::int64_t> values = detail::int64_values(indices);
  const Shape& strides = data.strides();
  const Shape slice_strides(strides.begin() + b + k, strides.end());
  visit_storage_type(data.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(data.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    std::size_t row = 0;
    std::int64_t written = 0;
    for_each_index(rows, [&](const Shape& ri) {
      // The row's element offset: its batch coordinates, then its k index values.
      std::int64_t base = 0;
      for (std::int64_t d = 0; d < b; ++d)
        base += ri[static_cast<std::size_t>(d)] * strides[static_cast<std::size_t>(d)];
      for (std::int64_t j = 0; j < k; ++j) {
        const auto axis = static_cast<std::size_t>(b + j);
        base += wrap_index(values[row * static_cast<std::size_t>(k) + static_cast<std::size_t>(j)],
                           ds[axis], "gather_nd", axis) *
                strides[axis];
      }
      for_each_index(slice, [&](const Shape& si) {
        out[written++] = in[base + offset_in(si, slice_strides)];
      });
      ++row;
    });
  });
  return output;
}

namespace {

// GatherElements / ScatterElements: indices have data's rank and, off `axis`, at most data's
// sizes (the spec asks for equal sizes only in ScatterElements; GatherElements reads a corner).
void check_element_indices(const Tensor& data, const Tensor& indices, std::size_t axis,
                           const char* op) {
  REFOLD_CHECK(indices.dim() == data.dim(), "{}: indices [{}] must have the rank of data [{}]", op,
               fmt::join(indices.sizes(), ", "), fmt::join(data.sizes(), ", "));
  for (std::size_t d = 0; d < data.sizes().size(); ++d)
    REFOLD_CHECK(d == axis || indices.sizes()[d] <= data.sizes()[d],
                 "{}: indices [{}] exceed data [{}] in dimension {}", op,
                 fmt::join(indices.sizes(), ", "), fmt::join(data.sizes(), ", "), d);
}

// Every index of `indices` along `axis`, wrapped into [0, size), in logical order: all are
// checked before an output exists.
std::vector<std::int64_t> element_indices(const Tensor& indices, std::int64_t size,
                                          std::size_t axis, const char* op) {
  std::vector<std::int64_t> values = detail::int64_values(indices);
  for (std::int64_t& i : values) i = wrap_index(i, size, op, axis);
  return values;
}

}  // namespace

Tensor gather_elements(const Tensor& data, const Tensor& indices, std::int64_t axis) {
  constexpr const char* op = "gather_elements";
  REFOLD_CHECK(data.defined(), "{}: data is undefined", op);
  check_indices(indices, op);
  REFOLD_CHECK(data.dim() > 0, "{}: data is 0-d", op);
  const auto a = static_cast<std::size_t>(detail::wrap_axis(axis, data.dim(), op));
  check_element_indices(data, indices, a, op);
  const std::vector<std::int64_t> idx_values = element_indices(indices, data.sizes()[a], a, op);
  Tensor output = empty(indices.sizes(), data.dtype());
  visit_storage_type(data.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(data.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    std::size_t k = 0;
    Shape src;
    for_each_index(indices.sizes(), [&](const Shape& idx) {
      src = idx;
      src[a] = idx_values[k];
      out[k++] = in[offset_in(src, data.strides())];
    });
  });
  return output;
}

Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates,
                        std::int64_t axis, ScatterReduction reduction) {
  constexpr const char* op = "scatter_elements";
  REFOLD_CHECK(data.defined() && updates.defined(), "{}: data or updates is undefined", op);
  check_indices(indices, op);
  REFOLD_CHECK(updates.dtype() == data.dtype(), "{}: updates have dtype {} but data has {}", op,
               dtype_name(updates.dtype()), dtype_name(data.dtype()));
  REFOLD_CHECK(updates.sizes() == indices.sizes(),
               "{}: updates [{}] must have the shape of indices [{}]", op,
               fmt::join(updates.sizes(), ", "), fmt::join(indices.sizes(), ", "));
  REFOLD_CHECK(data.dim() > 0, "{}: data is 0-d", op);
  const auto a = static_cast<std::size_t>(detail::wrap_axis(axis, data.dim(), op));
  check_element_indices(data, indices, a, op);
  const std::vector<std::int64_t> idx_values = element_indices(indices, data.sizes()[a], a, op);
  Tensor output =
      data.clone(data.dim() == 4 && data.suggest_memory_format() == MemoryFormat::ChannelsLast
                     ? MemoryFormat::ChannelsLast
                     : MemoryFormat::Contiguous);
  const Shape out_strides = output.strides();
  visit_storage_type(data.dtype(), [&]<typename T>(T) {
    const T* in = static_cast<const T*>(updates.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    // One step of the reduction: integers exactly (wrapping), floats in double rounded once.
    auto combine = [&](T old, T update) -> T {
      if constexpr (std::is_same_v<T, std::int64_t>) {
        switch (reduction) {
          case ScatterReduction::Add:
            return static_cast<T>(static_cast<std::uint64_t>(old) +
                                  static_cast<std::uint64_t>(update));
          case ScatterReduction::Mul:
            return static_cast<T>(static_cast<std::uint64_t>(old) *
                                  static_cast<std::uint64_t>(update));
          case ScatterReduction::Max:
            return std::max(old, update);
          case ScatterReduction::Min:
            return std::min(old, update);
          case ScatterReduction::None:
            break;
        }
        return update;
      } else {
        const double x = detail::storage_to_double(old), y = detail::storage_to_double(update);
        double r = y;
        switch (reduction) {
          case ScatterReduction::Add:
            r = x + y;
            break;
          case ScatterReduction::Mul:
            r = x * y;
            break;
          case ScatterReduction::Max:
            r = std::isnan(x) || x > y ? x : y;
            break;
          case ScatterReduction::Min:
            r = std::isnan(x) || x < y ? x : y;
            break;
          case ScatterReduction::None:
            return update;
        }
        return detail::storage_from_double<T>(r);
      }
    };
    std::size_t k = 0;
    Shape dst;
    for_each_index(indices.sizes(), [&](const Shape& idx) {
      dst = idx;
      dst[a] = idx_values[k++];
      T& target = out[offset_in(dst, out_strides)];
      target = combine(target, in[offset_in(idx, updates.strides())]);
    });
  });
  return output;
}

}  // namespace refold::reference
