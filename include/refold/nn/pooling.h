// torch.nn.MaxPool2d, AvgPool2d and AdaptiveAvgPool2d (PyTorch 1.13 names and defaults).
//
//   nn::MaxPool2d(nn::MaxPool2dOptions(3).stride(2).padding(1))
//   nn::AvgPool2d(nn::AvgPool2dOptions(2).ceil_mode(true).count_include_pad(false))
//   nn::AdaptiveAvgPool2d(1)   // global average pool
//
// stride defaults to kernel_size, as in PyTorch. Padding may be at most half the kernel
// (PyTorch's rule: a window must overlap the input). MaxPool2d's return_indices is not
// supported. All three accept channels_last and keep the input's memory format.
#pragma once

#include <cstdint>
#include <optional>

#include "refold/nn/module.h"
#include "refold/op_options.h"

namespace refold::nn {

class MaxPool2dOptions {
 public:
  explicit MaxPool2dOptions(Size2d kernel_size) { op_.kernel_size = kernel_size; }

  MaxPool2dOptions& stride(Size2d value) {
    op_.stride = value;
    return *this;
  }
  MaxPool2dOptions& padding(Size2d value) {
    op_.padding = value;
    return *this;
  }
  MaxPool2dOptions& dilation(Size2d value) {
    op_.dilation = value;
    return *this;
  }
  MaxPool2dOptions& ceil_mode(bool value) {
    op_.ceil_mode = value;
    return *this;
  }

  Size2d kernel_size() const { return op_.kernel_size; }
  Size2d stride() const { return op_.stride.value_or(op_.kernel_size); }
  Size2d padding() const { return op_.padding; }
  Size2d dilation() const { return op_.dilation; }
  bool ceil_mode() const { return op_.ceil_mode; }

  const refold::MaxPool2dOptions& op_options() const { return op_; }

 private:
  refold::MaxPool2dOptions op_;
};

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const MaxPool2dOptions& options);
  explicit MaxPool2d(Size2d kernel_size) : MaxPool2d(MaxPool2dOptions(kernel_size)) {}
  Tensor forward(const Tensor& input) override;
  const MaxPool2dOptions& options() const { return options_; }

 private:
  MaxPool2dOptions options_;
};

class AvgPool2dOptions {
 public:
  explicit AvgPool2dOptions(Size2d kernel_size) { op_.kernel_size = kernel_size; }

  AvgPool2dOptions& stride(Size2d value) {
    op_.stride = value;
    return *this;
  }
  AvgPool2dOptions& padding(Size2d value) {
    op_.padding = value;
    return *this;
  }
  AvgPool2dOptions& ceil_mode(bool value) {
    op_.ceil_mode = value;
    return *this;
  }
  AvgPool2dOptions& count_include_pad(bool value) {
    op_.count_include_pad = value;
    return *this;
  }
  // Divide every window's sum by this instead of its element count; must not be 0.
  AvgPool2dOptions& divisor_override(std::optional<std::int64_t> value) {
    op_.divisor_override = value;
    return *this;
  }

  Size2d kernel_size() const { return op_.kernel_size; }
  Size2d stride() const { return op_.stride.value_or(op_.kernel_size); }
  Size2d padding() const { return op_.padding; }
  bool ceil_mode() const { return op_.ceil_mode; }
  bool count_include_pad() const { return op_.count_include_pad; }
  std::optional<std::int64_t> divisor_override() const { return op_.divisor_override; }

  const refold::AvgPool2dOptions& op_options() const { return op_; }

 private:
  refold::AvgPool2dOptions op_;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const AvgPool2dOptions& options);
  explicit AvgPool2d(Size2d kernel_size) : AvgPool2d(AvgPool2dOptions(kernel_size)) {}
  Tensor forward(const Tensor& input) override;
  const AvgPool2dOptions& options() const { return options_; }

 private:
  AvgPool2dOptions options_;
};

class AdaptiveAvgPool2dOptions {
 public:
  explicit AdaptiveAvgPool2dOptions(Size2d output_size) : output_size_(output_size) {}
  Size2d output_size() const { return output_size_; }

 private:
  Size2d output_size_;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options);
  explicit AdaptiveAvgPool2d(Size2d output_size)
      : AdaptiveAvgPool2d(AdaptiveAvgPool2dOptions(output_size)) {}
  Tensor forward(const Tensor& input) override;
  const AdaptiveAvgPool2dOptions& options() const { return options_; }

 private:
  AdaptiveAvgPool2dOptions options_;
};

}  // namespace refold::nn
