// Argument checks and the output size of max_pool2d and avg_pool2d, shared by the reference and
// the oneDNN backend so that both reject the same calls with the same messages.
#pragma once

#include <cstdint>

#include <fmt/format.h>

#include "core/check.h"
#include "core/checked_math.h"
#include "refold/dtype.h"
#include "refold/error.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::reference::detail {

inline void check_pool_input(const Tensor& input, const char* op) {
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  REFOLD_CHECK(input.dtype() == DType::Float32 || input.dtype() == DType::BFloat16,
               "{}: input has dtype {}; only float32 and bfloat16 are supported", op,
               dtype_name(input.dtype()));
  REFOLD_CHECK(input.dim() == 3 || input.dim() == 4,
               "{}: input must be 3-d [C, H, W] or 4-d [N, C, H, W], got [{}]", op,
               fmt::join(input.sizes(), ", "));
  // PyTorch allows an empty batch but not empty channels or planes.
  const std::int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  REFOLD_CHECK(c > 0 && h > 0 && w > 0,
               "{}: input [{}] must have non-zero channels, height and width", op,
               fmt::join(input.sizes(), ", "));
}

// Checked before the stride, which defaults to the kernel size and would otherwise be blamed.
inline void check_pool_kernel(const char* op, Size2d kernel) {
  REFOLD_CHECK(kernel.h > 0 && kernel.w > 0, "{}: kernel_size ({}, {}) must be positive", op,
               kernel.h, kernel.w);
}

inline void check_divisor_override(const char* op, const AvgPool2dOptions& options) {
  REFOLD_CHECK(!options.divisor_override || *options.divisor_override > 0,
               "{}: divisor_override ({}) must be positive", op,
               options.divisor_override.value_or(0));
}

// pool_output_size for one axis; its errors get the op and the axis in front.
inline std::int64_t pool_size(const char* op, const char* axis, std::int64_t in,
                              std::int64_t kernel, std::int64_t stride, std::int64_t pad,
                              std::int64_t dilation, bool ceil_mode) {
  try {
    return pool_output_size(in, kernel, stride, pad, dilation, ceil_mode);
  } catch (const Error& e) {
    fail("{}: {}: {}", op, axis, e.message());
  }
}

// Adaptive pooling's window along one axis: output i of O averages input
// [floor(i·I / O), ceil((i + 1)·I / O)); windows cover the input, overlapping by one when O does
// not divide I. Shared by the reference and the native kernel (kernels/native).
struct AdaptiveWindow {
  std::int64_t begin, end;
};
inline AdaptiveWindow adaptive_window(const char* op, std::int64_t i, std::int64_t in_size,
                                      std::int64_t out_size) {
  return {checked_mul(i, in_size, op) / out_size,
          (checked_mul(i + 1, in_size, op) + out_size - 1) / out_size};
}

}  // namespace refold::reference::detail
