// Resize's per-dimension coordinate mapping (ONNX coordinate_transformation_mode and
// nearest_mode, the rules in tensor_ops.h), shared by the reference (resize.cpp) and the native
// NHWC/NCHW fast path (kernels/native/resize2d.h), so both sample the same inputs with the same
// weights.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/reference/tensor_ops.h"

namespace refold::reference::detail {

// Input coordinate of output coordinate x of a dimension of `in` elements resized to `out`;
// `length` is the resized length before flooring (in · scale), as the ONNX reference uses it.
double resize_source_coordinate(std::int64_t x, std::int64_t in, std::int64_t out, double length,
                                double scale, CoordinateMode mode);

// x rounded to an integer by `mode` (round_prefer_floor rounds halves down, …).
std::int64_t resize_round_nearest(double x, NearestMode mode);

// One output coordinate of one dimension: value = w0·in[i0] + w1·in[i1]. Nearest: i1 = i0,
// w0 = 1, w1 = 0; linear: i0 = ⌊c⌋, i1 = min(i0 + 1, in − 1), w1 = c − i0 (c clamped to
// [0, in − 1]), w0 = 1 − w1 > 0, so w1 = 0 exactly when the output lands on input i0.
struct ResizeTap {
  std::int64_t i0 = 0, i1 = 0;
  double w0 = 1, w1 = 0;
};

// The taps of every output coordinate of one dimension (nearest or linear; not cubic).
std::vector<ResizeTap> resize_taps(std::int64_t in, std::int64_t out, double scale, double length,
                                   const ResizeParams& params);

// Cubic, and antialiased linear where a dimension shrinks: each output coordinate of a dimension
// reads a few inputs (4 for cubic without antialias), (index, weight) with the zero weights left
// out (resize.cpp has the formula).
using FilterTaps = std::vector<std::vector<std::pair<std::int64_t, double>>>;
FilterTaps resize_filter_taps(std::int64_t in, std::int64_t out, double scale, double length,
                              const ResizeParams& params);

// Whether antialias stretches a filter here: linear or cubic with antialias and some scale
// below 1 (an output then reads more than 4 inputs).
bool resize_antialias_stretches(const ResizeParams& params, const std::vector<double>& scales);

// Whether Resize takes its taps from resize_filter_taps (cubic; antialiased linear with a scale
// below 1) rather than resize_taps.
bool resize_uses_filter(const ResizeParams& params, const std::vector<double>& scales);

}  // namespace refold::reference::detail
