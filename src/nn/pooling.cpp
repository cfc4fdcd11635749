#include "refold/nn/pooling.h"

#include "core/check.h"
#include "refold/functional.h"

namespace refold::nn {

namespace {

// The window checks both pools share. Padding beyond half the kernel would allow windows that
// lie entirely in the padding (PyTorch: "pad should be at most half of kernel size").
void check_window(const char* type, Size2d kernel, Size2d stride, Size2d padding) {
  REFOLD_CHECK(kernel.h > 0 && kernel.w > 0, "{}: kernel_size ({}, {}) must be positive", type,
               kernel.h, kernel.w);
  REFOLD_CHECK(stride.h > 0 && stride.w > 0, "{}: stride ({}, {}) must be positive", type, stride.h,
               stride.w);
  REFOLD_CHECK(padding.h >= 0 && padding.w >= 0, "{}: padding ({}, {}) must be non-negative", type,
               padding.h, padding.w);
  REFOLD_CHECK(padding.h <= kernel.h / 2 && padding.w <= kernel.w / 2,
               "{}: padding ({}, {}) must be at most half of kernel_size ({}, {})", type, padding.h,
               padding.w, kernel.h, kernel.w);
}

}  // namespace

MaxPool2d::MaxPool2d(const MaxPool2dOptions& options) : Module("MaxPool2d"), options_(options) {
  const auto& o = options_;
  check_window("MaxPool2d", o.kernel_size(), o.stride(), o.padding());
  REFOLD_CHECK(o.dilation().h > 0 && o.dilation().w > 0,
               "MaxPool2d: dilation ({}, {}) must be positive", o.dilation().h, o.dilation().w);
}

Tensor MaxPool2d::forward(const Tensor& input) {
  return functional::max_pool2d(input, options_.op_options());
}

AvgPool2d::AvgPool2d(const AvgPool2dOptions& options) : Module("AvgPool2d"), options_(options) {
  const auto& o = options_;
  check_window("AvgPool2d", o.kernel_size(), o.stride(), o.padding());
  REFOLD_CHECK(o.divisor_override().value_or(1) != 0, "AvgPool2d: divisor_override must not be 0");
}

Tensor AvgPool2d::forward(const Tensor& input) {
  return functional::avg_pool2d(input, options_.op_options());
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(const AdaptiveAvgPool2dOptions& options)
    : Module("AdaptiveAvgPool2d"), options_(options) {
  const Size2d out = options_.output_size();
  REFOLD_CHECK(out.h > 0 && out.w > 0, "AdaptiveAvgPool2d: output_size ({}, {}) must be positive",
               out.h, out.w);
}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) {
  return functional::adaptive_avg_pool2d(input, options_.output_size());
}

}  // namespace refold::nn
