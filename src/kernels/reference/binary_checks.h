// Argument checks of add and mul, shared by the reference and the oneDNN backend so that both
// reject the same calls with the same messages.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <fmt/format.h>

#include "core/check.h"
#include "refold/dtype.h"
#include "refold/tensor.h"

namespace refold::reference::detail {

inline void check_binary_operand(const Tensor& t, std::string_view op, const char* name) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", op, name);
  REFOLD_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::BFloat16,
               "{}: {} has dtype {}; only float32 and bfloat16 are supported", op, name,
               dtype_name(t.dtype()));
}

// NumPy broadcasting: align the shapes at their last dimension; each pair of sizes must be equal
// or contain a 1, and the output takes the larger.
inline Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op) {
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {  // i counts from the last dimension
    const std::int64_t sa = i < a.size() ? a[a.size() - 1 - i] : 1;
    const std::int64_t sb = i < b.size() ? b[b.size() - 1 - i] : 1;
    REFOLD_CHECK(sa == sb || sa == 1 || sb == 1,
                 "{}: shapes [{}] and [{}] cannot be broadcast (dimension {}: {} vs {})", op,
                 fmt::join(a, ", "), fmt::join(b, ", "), -static_cast<std::int64_t>(i) - 1, sa, sb);
    out[rank - 1 - i] = sa == 1 ? sb : sa;
  }
  return out;
}

// Checks a and b (defined, float32 or bfloat16, one dtype, broadcastable) and returns the
// output's shape.
inline Shape check_binary(const Tensor& a, const Tensor& b, std::string_view op) {
  check_binary_operand(a, op, "a");
  check_binary_operand(b, op, "b");
  REFOLD_CHECK(a.dtype() == b.dtype(), "{}: a has dtype {} but b has {}", op, dtype_name(a.dtype()),
               dtype_name(b.dtype()));
  return broadcast_shape(a.sizes(), b.sizes(), op);
}

// The operand whose layout an element-wise op's output takes (its strides, empty_like with
// MemoryFormat::Preserve): `a` when it has the output's shape `sizes`, else `b` when it does;
// nullptr when neither has it ([3, 1] + [1, 4]): the output is then contiguous. PyTorch's rule
// (TensorIterator) for these cases. Tried and not kept (session 52): a channels_last operand
// first. It kept EfficientViT's cascaded heads (an NCHW attention output plus a conv's NHWC
// channel slice) in NHWC, but ConViT's [1, heads, N, N] attention maps, channels_last in memory
// where a product was written permuted, then ran its Adds and Divs along rows of 4 heads:
// 1.66× the time. The layout plan models this rule (passes/layout.cpp, Rule::Broadcasting).
inline const Tensor* layout_operand(const Tensor& a, const Tensor& b, const Shape& sizes) {
  if (a.sizes() == sizes) return &a;
  return b.sizes() == sizes ? &b : nullptr;
}

}  // namespace refold::reference::detail
