// Options of the CNN operators, shared by the reference kernels (refold/reference.h), the
// dispatching functional API (refold/functional.h) and the modules (refold/nn/*.h).
// Names and defaults are PyTorch's (torch.nn.functional).
#pragma once

#include <cstdint>
#include <optional>

namespace refold {

// A (height, width) pair; one value means both, like PyTorch's `int or tuple`.
struct Size2d {
  std::int64_t h = 0;
  std::int64_t w = 0;
  Size2d(std::int64_t both) : h(both), w(both) {}  // NOLINT: implicit, as in PyTorch
  Size2d(std::int64_t height, std::int64_t width) : h(height), w(width) {}
  bool operator==(const Size2d&) const = default;
};

// Explicit zero padding per side.
struct Pads2d {
  std::int64_t top = 0, left = 0, bottom = 0, right = 0;
  bool operator==(const Pads2d&) const = default;
};

// Convolution padding: explicit (symmetric or asymmetric), or PyTorch's "same" / "valid".
class Padding2d {
 public:
  enum class Mode { Explicit, Same, Valid };
  Padding2d(std::int64_t all) : pads_{all, all, all, all} {}  // NOLINT: implicit
  Padding2d(std::int64_t height, std::int64_t width) : pads_{height, width, height, width} {}
  Padding2d(Size2d hw) : Padding2d(hw.h, hw.w) {}  // NOLINT: implicit
  static Padding2d asymmetric(std::int64_t top, std::int64_t left, std::int64_t bottom,
                              std::int64_t right) {
    Padding2d p(0);
    p.pads_ = {top, left, bottom, right};
    return p;
  }
  static Padding2d same() { return Padding2d(Mode::Same); }
  static Padding2d valid() { return Padding2d(Mode::Valid); }

  Mode mode() const { return mode_; }
  const Pads2d& explicit_pads() const { return pads_; }
  // The zero padding of each side for a kernel. "same" pads dilation·(k−1) in total per axis,
  // half before and the odd one after (PyTorch's rule); "valid" pads nothing.
  Pads2d resolve(Size2d kernel, Size2d dilation) const;

 private:
  explicit Padding2d(Mode mode) : mode_(mode) {}
  Mode mode_ = Mode::Explicit;
  Pads2d pads_;
};

struct Conv2dOptions {
  Size2d stride = 1;
  Padding2d padding = 0;
  Size2d dilation = 1;
  std::int64_t groups = 1;
};

struct ConvTranspose2dOptions {
  Size2d stride = 1;
  Size2d padding = 0;
  Size2d output_padding = 0;
  std::int64_t groups = 1;
  Size2d dilation = 1;
};

struct MaxPool2dOptions {
  Size2d kernel_size = 1;
  std::optional<Size2d> stride;  // default: kernel_size
  Size2d padding = 0;
  Size2d dilation = 1;
  bool ceil_mode = false;
};

struct AvgPool2dOptions {
  Size2d kernel_size = 1;
  std::optional<Size2d> stride;  // default: kernel_size
  Size2d padding = 0;
  bool ceil_mode = false;
  bool count_include_pad = true;
  std::optional<std::int64_t> divisor_override;
};

// --- output sizes (each validates its arguments and throws refold::Error naming them)

// floor((in + pad_begin + pad_end − dilation·(k−1) − 1) / stride) + 1; must be ≥ 1.
std::int64_t conv_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                              std::int64_t pad_begin, std::int64_t pad_end, std::int64_t dilation);
// (in−1)·stride − 2·pad + dilation·(k−1) + output_padding + 1; must be ≥ 1.
std::int64_t conv_transpose_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                        std::int64_t pad, std::int64_t output_padding,
                                        std::int64_t dilation);
// PyTorch's pooling_output_shape: like conv, rounding up under ceil_mode, except that the last
// window must start inside the input or the left padding.
std::int64_t pool_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                              std::int64_t pad, std::int64_t dilation, bool ceil_mode);

}  // namespace refold
