// Argument checks, the output-format rule and the loops shared by the reference convs (conv2d,
// conv_transpose2d, conv_nd, conv_transpose_nd; linear uses the operand checks).
// Every message starts with the op name ("conv2d: ...") and gives the offending values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/element_access.h"
#include "kernels/reference/onnx_ops.h"
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

// An undefined bias means "no bias"; a defined one is [outputs] of the input's dtype, where
// `outputs` is the count named `outputs_name` (out_channels, out_features).
inline void check_bias(std::string_view op, const Tensor& bias, std::int64_t outputs,
                       const Tensor& input, std::string_view outputs_name = "out_channels") {
  if (!bias.defined()) return;
  REFOLD_CHECK(bias.dim() == 1 && bias.size(0) == outputs,
               "{}: bias must be 1-d with {} ({}) elements, got {}", op, outputs_name, outputs,
               bias.description());
  check_same_dtype(op, "bias", bias, input);
}

// linear's argument checks (PyTorch's messages, "linear: …"); the output's sizes,
// [..., out_features].
Shape check_linear(const Tensor& input, const Tensor& weight, const Tensor& bias);

// The bias as `outputs` values; no bias reads as zeros.
inline std::vector<float> bias_values(const Tensor& bias, std::int64_t outputs) {
  return bias.defined() ? bias.to_vector() : std::vector<float>(static_cast<std::size_t>(outputs));
}

inline void check_positive(std::string_view op, std::string_view name, Size2d value) {
  REFOLD_CHECK(value.h > 0 && value.w > 0, "{}: {} ({}, {}) must be positive", op, name, value.h,
               value.w);
}

// The checks both convs start with: input [N, C_in, H, W] and weight (laid out as
// `weight_layout`) are 4-d float tensors of one dtype; stride and dilation are positive.
inline void check_conv_operands(std::string_view op, const Tensor& input, const Tensor& weight,
                                std::string_view weight_layout, Size2d stride, Size2d dilation) {
  check_operand(op, "input", input, 4, "[N, C_in, H, W]");
  check_operand(op, "weight", weight, 4, weight_layout);
  check_same_dtype(op, "weight", weight, input);
  check_positive(op, "stride", stride);
  check_positive(op, "dilation", dilation);
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

// The validated shape of a conv2d problem: every argument check of conv2d, in one place, for
// every backend (same refold::Error texts whichever implementation runs).
struct Conv2dGeometry {
  std::int64_t batch, in_channels, in_h, in_w, out_channels, kh, kw, groups, out_h, out_w;
  Pads2d pads;
};

inline Conv2dGeometry check_conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                   const Conv2dOptions& options) {
  constexpr std::string_view op = "conv2d";
  check_conv_operands(op, input, weight, "[C_out, C_in/groups, kh, kw]", options.stride,
                      options.dilation);
  Conv2dGeometry g{};
  g.groups = options.groups;
  REFOLD_CHECK(g.groups > 0, "{}: groups ({}) must be positive", op, g.groups);
  g.batch = input.size(0), g.in_channels = input.size(1);
  g.in_h = input.size(2), g.in_w = input.size(3);
  g.out_channels = weight.size(0), g.kh = weight.size(2), g.kw = weight.size(3);
  REFOLD_CHECK(g.in_channels % g.groups == 0, "{}: groups ({}) must divide in_channels ({})", op,
               g.groups, g.in_channels);
  REFOLD_CHECK(g.out_channels % g.groups == 0, "{}: groups ({}) must divide out_channels ({})", op,
               g.groups, g.out_channels);
  // weight is [C_out, C_in/groups, kh, kw]: each output channel sees its group's inputs only.
  REFOLD_CHECK(weight.size(1) * g.groups == g.in_channels,
               "{}: input has {} channels, weight expects {} (groups {}, weight {})", op,
               g.in_channels, weight.size(1) * g.groups, g.groups, weight.description());
  check_bias(op, bias, g.out_channels, input);
  // PyTorch rejects 'same' with stride > 1: the output could not keep the input's size.
  REFOLD_CHECK(options.padding.mode() != Padding2d::Mode::Same ||
                   (options.stride.h == 1 && options.stride.w == 1),
               "{}: padding 'same' requires stride 1, got stride ({}, {})", op, options.stride.h,
               options.stride.w);
  g.pads = with_context(op, "", [&] {
    return options.padding.resolve({g.kh, g.kw}, options.dilation);
  });
  const Size2d s = options.stride, d = options.dilation;
  g.out_h = with_context(op, "height", [&] {
    return conv_output_size(g.in_h, g.kh, s.h, g.pads.top, g.pads.bottom, d.h);
  });
  g.out_w = with_context(op, "width", [&] {
    return conv_output_size(g.in_w, g.kw, s.w, g.pads.left, g.pads.right, d.w);
  });
  // An input of no elements (C_in = 0) may give an output whose N·C_out·H·W is past int64; every
  // kernel multiplies those (found by the optimize-run fuzzer).
  const std::int64_t out_sizes[] = {g.batch, g.out_channels, g.out_h, g.out_w};
  checked_numel(out_sizes, "conv2d: output");
  return g;
}

// reference::conv2d on arguments check_conv2d has already validated (the dispatch's fallback,
// kernels/conv2d_call.h): the loops only.
Tensor conv2d_checked(const Tensor& input, const Tensor& weight, const Tensor& bias,
                      const Conv2dOptions& options, const Conv2dGeometry& g);

// PyTorch's rule (at::native::ConvUtils' cudnn/mkldnn "conv_suggest_memory_format"): a conv
// writes channels_last when either the input or the weight suggests channels_last.
inline MemoryFormat conv_output_format(const Tensor& input, const Tensor& weight) {
  const bool cl = input.suggest_memory_format() == MemoryFormat::ChannelsLast ||
                  weight.suggest_memory_format() == MemoryFormat::ChannelsLast;
  return cl ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
}

// The loops every reference conv runs (conv_nd.cpp), over three spatial axes (d, h, w): a conv
// with fewer axes is the same conv with leading spatial axes of size 1 (kernel 1, stride 1,
// dilation 1, no padding), so 1-d, 2-d and 3-d share one loop nest.
struct Window3d {
  std::array<std::int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1};
  std::array<std::int64_t, 3> pad_begin{0, 0, 0};  // any sign for the transposed conv
  std::int64_t groups = 1;
};

// The window of a 2-d conv (d is the unit axis).
inline Window3d window_2d(Size2d stride, Size2d dilation, std::int64_t pad_top,
                          std::int64_t pad_left, std::int64_t groups) {
  return {{1, stride.h, stride.w}, {1, dilation.h, dilation.w}, {0, pad_top, pad_left}, groups};
}

// Fills every element of `output` (allocated with the conv's sizes, any strides): conv_gather
// computes the convolution, conv_transpose_gather its adjoint (the transposed convolution), each
// element a sum in double rounded once to the output dtype. The operands are validated already;
// weight is [C_out, C_in/groups, k…] for the conv and [C_in, C_out/groups, k…] transposed.
void conv_gather(const Tensor& input, const Tensor& weight, const Tensor& bias,
                 const Window3d& window, Tensor& output);
void conv_transpose_gather(const Tensor& input, const Tensor& weight, const Tensor& bias,
                           const Window3d& window, Tensor& output);

// The checks of conv_nd / conv_transpose_nd (reference and oneDNN: the same messages), and the
// output's sizes [N, C_out, out_1, …, out_r].
Shape check_conv_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                    const ConvNdParams& params);
Shape check_conv_transpose_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                              const ConvNdParams& params);

}  // namespace refold::reference::detail
