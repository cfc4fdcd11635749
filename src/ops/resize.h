// ONNX Resize (opset 11+) and Upsample (opsets 7–9: Resize with asymmetric coordinates and, for
// nearest, floor) as a graph op: modes nearest, linear and cubic, any rank and strides.
//
// inputs: X, roi (ignored: only tf_crop_and_resize reads it, and that mode is unsupported),
// scales (float32, one per resized axis) or sizes (int64) — exactly one of them non-empty.
//   scales given: length = in · scale, out = floor(length)
//   sizes given:  length = out, scale = out / in
// For output coordinate x of a dimension the input coordinate is
//   half_pixel            (x + 0.5) / scale − 0.5
//   pytorch_half_pixel    length > 1 ? (x + 0.5) / scale − 0.5 : −0.5
//   asymmetric            x / scale
//   tf_half_pixel_for_nn  (x + 0.5) / scale
//   align_corners         length > 1 ? x · (in − 1) / (length − 1) : 0
// (align_corners with scales uses the unfloored length, as the ONNX reference does: its
// test_resize_downsample_scales_linear_align_corners expects it)
// nearest rounds it by `nearest_mode` (round_prefer_floor rounds halves down, round_prefer_ceil
// up, floor, ceil); linear blends the two neighbours in every resized dimension; coordinates are
// clamped to [0, in − 1] (the reference's edge padding); cubic blends four neighbours with Keys'
// weights (cubic_coeff_a, default −0.75), edge elements outside the input unless
// exclude_outside = 1 drops them and renormalizes. antialias = 1 (opset 18) stretches the linear
// and cubic filters by 1 / scale where a dimension shrinks. Nearest copies elements exactly (any
// dtype); linear and cubic compute in double and need float input. `axes` (opset 18) names the
// dimensions scales/sizes refer to; the others keep their size.
//
// The output keeps a channels_last input's format, so Resize accepts channels_last.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/reference/tensor_ops.h"
#include "refold/graph/op.h"

namespace refold::ops {

struct ResizeOptions {
  // The kernel's own names (kernels/reference/tensor_ops.h, where the math is).
  using Mode = reference::ResizeMode;
  using NearestMode = reference::NearestMode;
  using Coordinates = reference::CoordinateMode;
  reference::ResizeParams params;  // mode, coordinates, nearest mode, cubic and antialias
  std::vector<std::int64_t> axes;  // empty: every dimension, in order
  // Upsample: the scales, from the attribute (opset 7–8) or input 1 (9); X is input 0.
  bool upsample = false;
  std::vector<float> upsample_scales;
};

class Resize : public graph::Op {
 public:
  explicit Resize(ResizeOptions options)
      : Op(options.upsample ? "Upsample" : "Resize"), options_(std::move(options)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override;
  const ResizeOptions& options() const { return options_; }

 private:
  ResizeOptions options_;
};

// Per dimension: the output size, the scale and the unfloored resized length.
struct ResizeGeometry {
  Shape sizes;
  std::vector<double> scales;
  std::vector<double> lengths;
};

// The geometry for an input of `sizes` (rules above); `scales` or `sizes_input` is undefined or
// empty. Throws refold::Error when both or neither are given, on a length that does not match
// the axes, a scale ≤ 0 or not finite, or a negative size.
ResizeGeometry resize_geometry(const Shape& sizes, const Tensor& scales, const Tensor& sizes_input,
                               const std::vector<std::int64_t>& axes);

}  // namespace refold::ops
