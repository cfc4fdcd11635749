#include "refold/graph/ops/window.h"

#include <algorithm>

namespace refold::graph::ops {

std::string auto_pad_name(AutoPad mode) {
  switch (mode) {
    case AutoPad::NotSet:
      return "NOTSET";
    case AutoPad::Valid:
      return "VALID";
    case AutoPad::SameUpper:
      return "SAME_UPPER";
    case AutoPad::SameLower:
      return "SAME_LOWER";
  }
  return "?";
}

void same_padding(std::int64_t in, std::int64_t kernel, std::int64_t stride, std::int64_t dilation,
                  bool upper, std::int64_t& begin, std::int64_t& end) {
  // out = ceil(in / stride); total = max(0, (out − 1)·stride + dilation·(k − 1) + 1 − in)
  const std::int64_t out = (in + stride - 1) / stride;
  const std::int64_t total =
      std::max<std::int64_t>(0, (out - 1) * stride + dilation * (kernel - 1) + 1 - in);
  const std::int64_t small = total / 2;
  begin = upper ? small : total - small;
  end = total - begin;
}

bool WindowPadding::is_static(Size2d stride) const {
  if (mode == AutoPad::NotSet || mode == AutoPad::Valid) return true;
  return stride.h == 1 && stride.w == 1;
}

Pads2d WindowPadding::resolve(Size2d in, Size2d kernel, Size2d stride, Size2d dilation) const {
  switch (mode) {
    case AutoPad::NotSet:
      return pads;
    case AutoPad::Valid:
      return {};
    case AutoPad::SameUpper:
    case AutoPad::SameLower: {
      const bool upper = mode == AutoPad::SameUpper;
      Pads2d p;
      same_padding(in.h, kernel.h, stride.h, dilation.h, upper, p.top, p.bottom);
      same_padding(in.w, kernel.w, stride.w, dilation.w, upper, p.left, p.right);
      return p;
    }
  }
  return pads;
}

}  // namespace refold::graph::ops
