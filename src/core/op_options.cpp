#include "refold/op_options.h"

#include "core/check.h"
#include "core/checked_math.h"

namespace refold {

Pads2d Padding2d::resolve(Size2d kernel, Size2d dilation) const {
  switch (mode_) {
    case Mode::Explicit:
      REFOLD_CHECK(pads_.top >= 0 && pads_.left >= 0 && pads_.bottom >= 0 && pads_.right >= 0,
                   "padding must be non-negative, got (top {}, left {}, bottom {}, right {})",
                   pads_.top, pads_.left, pads_.bottom, pads_.right);
      return pads_;
    case Mode::Valid:
      return {};
    case Mode::Same: {
      // Total padding dilation·(k−1) keeps the size at stride 1; the odd pixel goes after.
      const std::int64_t th = checked_mul(dilation.h, kernel.h - 1, "padding 'same'");
      const std::int64_t tw = checked_mul(dilation.w, kernel.w - 1, "padding 'same'");
      return {th / 2, tw / 2, th - th / 2, tw - tw / 2};
    }
  }
  return pads_;
}

std::int64_t conv_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                              std::int64_t pad_begin, std::int64_t pad_end, std::int64_t dilation) {
  REFOLD_CHECK(stride > 0, "stride ({}) must be positive", stride);
  REFOLD_CHECK(dilation > 0, "dilation ({}) must be positive", dilation);
  REFOLD_CHECK(kernel > 0, "kernel size ({}) must be positive", kernel);
  REFOLD_CHECK(pad_begin >= 0 && pad_end >= 0, "padding ({}, {}) must be non-negative", pad_begin,
               pad_end);
  const std::int64_t padded = checked_add(in, checked_add(pad_begin, pad_end, "conv"), "conv");
  const std::int64_t span = checked_add(checked_mul(dilation, kernel - 1, "conv"), 1, "conv");
  REFOLD_CHECK(padded >= span,
               "output size would be <= 0 (input {}, padding {}/{}, kernel {}, dilation {})", in,
               pad_begin, pad_end, kernel, dilation);
  return (padded - span) / stride + 1;
}

std::int64_t conv_transpose_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                        std::int64_t pad, std::int64_t output_padding,
                                        std::int64_t dilation) {
  REFOLD_CHECK(stride > 0, "stride ({}) must be positive", stride);
  REFOLD_CHECK(dilation > 0, "dilation ({}) must be positive", dilation);
  REFOLD_CHECK(kernel > 0, "kernel size ({}) must be positive", kernel);
  REFOLD_CHECK(pad >= 0, "padding ({}) must be non-negative", pad);
  REFOLD_CHECK(output_padding >= 0 && (output_padding < stride || output_padding < dilation),
               "output_padding ({}) must be smaller than either stride ({}) or dilation ({})",
               output_padding, stride, dilation);
  const std::int64_t out = checked_add(
      checked_add(checked_mul(in - 1, stride, "conv_transpose"),
                  checked_mul(dilation, kernel - 1, "conv_transpose"), "conv_transpose"),
      output_padding + 1 - 2 * pad, "conv_transpose");
  REFOLD_CHECK(out > 0,
               "output size would be <= 0 (input {}, stride {}, padding {}, kernel {}, dilation "
               "{}, output_padding {})",
               in, stride, pad, kernel, dilation, output_padding);
  return out;
}

std::int64_t pool_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                              std::int64_t pad, std::int64_t dilation, bool ceil_mode) {
  REFOLD_CHECK(stride > 0, "stride ({}) must be positive", stride);
  REFOLD_CHECK(dilation > 0, "dilation ({}) must be positive", dilation);
  REFOLD_CHECK(kernel > 0, "kernel size ({}) must be positive", kernel);
  REFOLD_CHECK(pad >= 0 && 2 * pad <= kernel,
               "padding ({}) must be non-negative and at most half the kernel size ({})", pad,
               kernel);
  const std::int64_t span = checked_add(checked_mul(dilation, kernel - 1, "pool"), 1, "pool");
  const std::int64_t room = checked_add(in, 2 * pad, "pool") - span;
  REFOLD_CHECK(room >= 0,
               "output size would be <= 0 (input {}, padding {}, kernel {}, dilation {})", in, pad,
               kernel, dilation);
  std::int64_t out = (ceil_mode ? (room + stride - 1) / stride : room / stride) + 1;
  // PyTorch: under ceil_mode the last window must start inside the input or left padding.
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

}  // namespace refold
