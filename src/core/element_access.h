// Reading and writing one element as float, whatever the dtype. The reference kernels use
// these over logical indices; they are the oracle, so clarity beats speed here.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "refold/dtype.h"
#include "refold/tensor.h"

namespace refold {

inline float load_as_float(const void* base, DType dtype, std::int64_t offset) {
  switch (dtype) {
    case DType::Float32:
      return static_cast<const float*>(base)[offset];
    case DType::BFloat16:
      return static_cast<float>(static_cast<const BFloat16*>(base)[offset]);
    case DType::Int64:
      return static_cast<float>(static_cast<const std::int64_t*>(base)[offset]);
  }
  return 0.0f;
}

inline void store_from_float(void* base, DType dtype, std::int64_t offset, float value) {
  switch (dtype) {
    case DType::Float32:
      static_cast<float*>(base)[offset] = value;
      return;
    case DType::BFloat16:
      static_cast<BFloat16*>(base)[offset] = BFloat16(value);
      return;
    case DType::Int64:
      static_cast<std::int64_t*>(base)[offset] = static_cast<std::int64_t>(value);
      return;
  }
}

// The value of `dtype` nearest to `value` (ties to even), as a float, rounded ONCE: kernels
// compute in double and store through this. For bfloat16 a plain double → float → bfloat16
// chain rounds twice and can miss by one bf16 ulp when the float lands exactly on a bf16 tie;
// rounding to float by round-to-odd first (truncate, then set the last bit if anything was
// dropped) keeps the sticky information, so the second rounding gives the correctly rounded
// result (Boldo & Melquiond: needs 24 >= 8 + 2 bits).
inline float round_to_dtype(double value, DType dtype) {
  float f = static_cast<float>(value);
  if (dtype != DType::BFloat16 || std::isnan(value) || static_cast<double>(f) == value) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(value)) f = std::nextafter(f, 0.0f);
  f = std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
  return static_cast<float>(BFloat16(f));
}

// Read-only float view of a tensor of any dtype and strides (up to any rank).
class FloatReader {
 public:
  explicit FloatReader(const Tensor& t)
      : base_(t.data_ptr()), dtype_(t.dtype()), strides_(t.strides()) {}
  float at_offset(std::int64_t offset) const { return load_as_float(base_, dtype_, offset); }
  std::int64_t stride(std::size_t dim) const { return strides_[dim]; }
  const Shape& strides() const { return strides_; }

 private:
  const void* base_;
  DType dtype_;
  Shape strides_;
};

class FloatWriter {
 public:
  explicit FloatWriter(Tensor& t) : base_(t.data_ptr()), dtype_(t.dtype()), strides_(t.strides()) {}
  void set_offset(std::int64_t offset, float value) const {
    store_from_float(base_, dtype_, offset, value);
  }
  float at_offset(std::int64_t offset) const { return load_as_float(base_, dtype_, offset); }
  std::int64_t stride(std::size_t dim) const { return strides_[dim]; }
  const Shape& strides() const { return strides_; }

 private:
  void* base_;
  DType dtype_;
  Shape strides_;
};

// Calls fn(index) for every logical index of `sizes` in row-major order.
template <typename Fn>
void for_each_index(const Shape& sizes, Fn&& fn) {
  for (std::int64_t s : sizes)
    if (s == 0) return;
  Shape index(sizes.size(), 0);
  while (true) {
    fn(static_cast<const Shape&>(index));
    std::size_t d = sizes.size();
    while (d > 0) {
      --d;
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
      if (d == 0) return;
    }
    if (sizes.empty()) return;
  }
}

inline std::int64_t offset_of(const Shape& index, const Shape& strides) {
  std::int64_t off = 0;
  for (std::size_t i = 0; i < index.size(); ++i) off += index[i] * strides[i];
  return off;
}

}  // namespace refold
