// Exact, dtype-generic element access for the ONNX tensor kernels (tensor_ops.h).
//
// The shape arithmetic of an exported model runs on int64 tensors (shapes, indices) and the
// constant folder runs it too, so these kernels never round int64 through float (FloatReader
// would: 2^53 + 1 is not a float). Data movement copies raw elements of the tensor's own type;
// bfloat16 moves as its 16 bits.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/element_access.h"
#include "refold/tensor.h"

namespace refold::reference::detail {

// Calls fn(T{}) with the storage type of `dtype`: float, std::uint16_t (bfloat16 bits) or
// std::int64_t.
template <typename Fn>
decltype(auto) visit_storage_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32:
      return fn(float{});
    case DType::BFloat16:
      return fn(std::uint16_t{});
    case DType::Int64:
      break;
  }
  return fn(std::int64_t{});
}

// A double rounded once to the storage type T of visit_storage_type (float, bfloat16's bits,
// int64 truncated), and a stored element back to double.
template <typename T>
T storage_from_double(double value) {
  if constexpr (std::is_same_v<T, float>) {
    return static_cast<float>(value);
  } else if constexpr (std::is_same_v<T, std::uint16_t>) {
    return BFloat16(round_to_dtype(value, DType::BFloat16)).bits;
  } else {
    return static_cast<std::int64_t>(value);
  }
}
template <typename T>
double storage_to_double(T stored) {
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    BFloat16 b;
    b.bits = stored;
    return static_cast<double>(static_cast<float>(b));
  } else {
    return static_cast<double>(stored);
  }
}

// A dimension index in [−rank, rank) → [0, rank).
inline std::int64_t wrap_axis(std::int64_t axis, std::int64_t rank, const char* op,
                              const char* name = "axis") {
  REFOLD_CHECK(axis >= -rank && axis < rank, "{}: {} {} out of range for a {}-d tensor", op, name,
               axis, rank);
  return axis < 0 ? axis + rank : axis;
}

// Element offset of a logical index through strides, for `rank` leading entries of `index`.
inline std::int64_t offset_in(const Shape& index, const Shape& strides) {
  std::int64_t off = 0;
  for (std::size_t i = 0; i < strides.size(); ++i) off += index[i] * strides[i];
  return off;
}

// NumPy broadcasting of `shapes` (right-aligned; sizes equal or 1). Names `op` and the shapes on
// a mismatch.
inline Shape broadcast_shapes(const std::vector<Shape>& shapes, const char* op) {
  std::size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (std::size_t k = 0; k < s.size(); ++k) {
      std::int64_t& o = out[rank - s.size() + k];
      const std::int64_t v = s[k];
      if (v == o || v == 1) continue;
      if (o == 1) {
        o = v;
        continue;
      }
      std::string all;
      for (const Shape& t : shapes)
        all += fmt::format("{}[{}]", all.empty() ? "" : " ", fmt::join(t, ", "));
      fail("{}: shapes {} cannot be broadcast (dimension {}: {} vs {})", op, all, k, o, v);
    }
  }
  return out;
}

// The strides that read `t` broadcast to `out` (rank ≥ t's): 0 on new and size-1 dimensions.
inline Shape broadcast_strides(const Tensor& t, const Shape& out) {
  Shape strides(out.size(), 0);
  const std::size_t lead = out.size() - static_cast<std::size_t>(t.dim());
  for (std::size_t k = 0; k < static_cast<std::size_t>(t.dim()); ++k)
    strides[lead + k] = t.sizes()[k] == 1 ? 0 : t.strides()[k];
  return strides;
}

// Reads an int64 tensor's elements in logical order (exact).
inline std::vector<std::int64_t> int64_values(const Tensor& t) {
  const auto* base = t.data<std::int64_t>();
  std::vector<std::int64_t> values;
  values.reserve(static_cast<std::size_t>(t.numel()));
  for_each_index(t.sizes(),
                 [&](const Shape& idx) { values.push_back(base[offset_in(idx, t.strides())]); });
  return values;
}

}  // namespace refold::reference::detail
