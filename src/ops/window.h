// The padding of an ONNX window op (Conv, ConvTranspose, MaxPool, AveragePool): explicit pads,
// or an auto_pad mode that depends on the input size and is resolved at run time.
//
//   ONNX pads = [top, left, bottom, right] (x1_begin, x2_begin, x1_end, x2_end)
//   SAME_UPPER / SAME_LOWER: out = ceil(in / stride) and
//     total = max(0, (out − 1)·stride + dilation·(k − 1) + 1 − in)
//     SAME_UPPER puts the odd unit at the end   (begin = total / 2, end = total − begin)
//     SAME_LOWER puts it at the beginning        (end = total / 2, begin = total − end)
//   VALID: no padding.
//
// With stride 1 the SAME total is dilation·(k − 1) whatever the input size, so the padding is
// known when the node is built (is_static); otherwise an op resolves it per call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/op_options.h"

namespace refold::ops {

enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

struct WindowPadding {
  AutoPad mode = AutoPad::NotSet;
  Pads2d pads;  // used when mode == NotSet

  // True when resolve() does not depend on the input size.
  bool is_static(Size2d stride) const;
  // The zero padding per side for an input of `in` (h, w).
  Pads2d resolve(Size2d in, Size2d kernel, Size2d stride, Size2d dilation) const;
};

// The SAME padding of one axis (the formula above); `upper` selects SAME_UPPER.
void same_padding(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t dilation,
                  bool upper, std::int64_t& begin, std::int64_t& end);

// ---- reading the attributes these ops share (docs/reliability.md F1–F7) ----
// Conv and ConvTranspose read theirs for 2 spatial axes (read_window_attrs; 1-d ones lifted to
// 2-d by lift_1d_window) or for 3 (read_window_nd, as the pools read any spatial rank). Messages
// start with the problem; the importer puts the file and node in front.

struct WindowAttrs {
  std::optional<Size2d> kernel_shape;  // absent when the attribute is
  Size2d strides = 1;
  Size2d dilations = 1;
  WindowPadding padding;
};

// Validates and reads kernel_shape, strides, dilations, pads and auto_pad for 2 spatial axes
// (read_window_nd's checks: every length is the spatial rank, strides/dilations/kernel_shape > 0,
// pads ≥ 0, auto_pad one of NOTSET/VALID/SAME_UPPER/SAME_LOWER and not combined with non-zero
// pads).
WindowAttrs read_window_attrs(const graph::Node& node);

// The same attributes for any spatial rank (pools over 3-d and 5-d tensors, 3-d convs): one value
// per spatial axis, pads as ONNX writes them (the begins, then the ends).
struct WindowNd {
  std::optional<std::vector<std::int64_t>> kernel_shape;
  std::vector<std::int64_t> strides, dilations, pads;
  AutoPad mode = AutoPad::NotSet;

  // The padding per side for spatial input sizes `in` and kernel `kernel`.
  void resolve(const Shape& in, const std::vector<std::int64_t>& kernel,
               std::vector<std::int64_t>& begin, std::vector<std::int64_t>& end) const;
};
WindowNd read_window_nd(const graph::Node& node, std::size_t rank);
// The spatial rank the window attributes describe: kernel_shape's length, else that of strides,
// dilations or half of pads (whichever is given first); 0 when none is.
std::size_t window_rank(const graph::Attributes& attrs);
// A copy of a 1-d window node (Conv, ConvTranspose) with its attributes written for 2-d over
// [N, C, 1, L]: kernel_shape [k] → [1, k], strides, dilations [s] → [1, s], pads [b, e] →
// [0, b, 0, e], output_padding [p] → [0, p], output_shape [o] → [1, o].
graph::Node lift_1d_window(const graph::Node& node);

// An ints attribute of exactly `count` values, or `fallback` when absent.
std::vector<std::int64_t> ints_of_length(const graph::Attributes& attrs, const std::string& name,
                                         std::size_t count,
                                         const std::vector<std::int64_t>& fallback);

}  // namespace refold::ops
