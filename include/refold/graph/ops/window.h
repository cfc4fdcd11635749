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
#include <string>

#include "refold/op_options.h"

namespace refold::graph::ops {

enum class AutoPad { NotSet, Valid, SameUpper, SameLower };

std::string auto_pad_name(AutoPad mode);  // "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"

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

}  // namespace refold::graph::ops
