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
// MemoryFormat::Preserve): of the operands that have the output's shape `sizes`, a channels_last
// one (suggest_memory_format()) before one that is not, else `a` before `b`. nullptr when
// neither has it ([3, 1] + [1, 4]): the output is then contiguous. Where an NCHW and an NHWC
// activation meet (an attention output added to a conv's, EfficientViT's cascaded heads), the
// sum goes on in channels_last, the format refold's convs run in; with one format, or one
// operand broadcast, it is PyTorch's rule (TensorIterator: the first full-shaped operand's).
// The layout plan models the same rule (passes/layout.cpp, Rule::ElementWise).
inline const Tensor* layout_operand(const Tensor& a, const Tensor& b, const Shape& sizes) {
  const bool a_full = a.sizes() == sizes, b_full = b.sizes() == sizes;
  if (a_full && b_full && a.suggest_memory_format() != MemoryFormat::ChannelsLast &&
      b.suggest_memory_format() == MemoryFormat::ChannelsLast)
    return &b;
  return a_full ? &a : b_full ? &b : nullptr;
}

}  // namespace refold::reference::detail
