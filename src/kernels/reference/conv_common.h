// Argument checks and the output-format rule shared by the reference conv2d, conv_transpose2d
// (and, for the operand checks, linear).
// Every message starts with the op name ("conv2d: ...") and gives the offending values.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include "core/check.h"
#include "core/element_access.h"
#include "refold/dtype.h"
#include "refold/error.h"
#include "refold/memory_format.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::reference::detail {

// `name` must be defined, of rank `rank` (described by `layout`, e.g. "[N, C_in, H, W]"), and
// float32 or bfloat16 — int64 exists only to carry PyTorch state_dicts, no kernel computes in it.
inline void check_operand(std::string_view op, std::string_view name, const Tensor& t,
                          std::int64_t rank, std::string_view layout) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", op, name);
  REFOLD_CHECK(t.dim() == rank, "{}: {} must be {}-d {}, got {}", op, name, rank, layout,
               t.description());
  REFOLD_CHECK(is_floating(t.dtype()), "{}: {} dtype {} is not supported (float32 or bfloat16)", op,
               name, dtype_name(t.dtype()));
}

// PyTorch does not promote between conv operands: weight and bias must have the input's dtype.
inline void check_same_dtype(std::string_view op, std::string_view name, const Tensor& t,
                             const Tensor& input) {
  REFOLD_CHECK(t.dtype() == input.dtype(), "{}: {} dtype {} does not match input dtype {}", op,
               name, dtype_name(t.dtype()), dtype_name(input.dtype()));
}

// An undefined bias means "no bias"; a defined one is [out_channels] of the input's dtype.
inline void check_bias(std::string_view op, const Tensor& bias, std::int64_t out_channels,
                       const Tensor& input) {
  if (!bias.defined()) return;
  REFOLD_CHECK(bias.dim() == 1 && bias.size(0) == out_channels,
               "{}: bias must be 1-d with out_channels ({}) elements, got {}", op, out_channels,
               bias.description());
  check_same_dtype(op, "bias", bias, input);
}

inline void check_positive(std::string_view op, std::string_view name, Size2d value) {
  REFOLD_CHECK(value.h > 0 && value.w > 0, "{}: {} ({}, {}) must be positive", op, name, value.h,
               value.w);
}

// Runs a size helper of op_options.h (conv_output_size, Padding2d::resolve, ...) and puts the
// op name and the axis in front of its message, so that errors read like every other of the op.
template <typename Fn>
auto with_context(std::string_view op, std::string_view axis, Fn&& fn) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const Error& e) {
    if (axis.empty()) fail("{}: {}", op, e.message());
    fail("{}: {}: {}", op, axis, e.message());
  }
}

// PyTorch's rule (at::native::ConvUtils' cudnn/mkldnn "conv_suggest_memory_format"): a conv
// writes channels_last when either the input or the weight suggests channels_last.
inline MemoryFormat conv_output_format(const Tensor& input, const Tensor& weight) {
  const bool cl = input.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                  weight.suggest_memory_format() == MemoryFormat::ChannelsLast;
  return cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

}  // namespace refold::reference::detail
