#include "ops/window.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/check.h"

namespace refold::ops {

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

std::vector<std::int64_t> ints_of_length(const graph::Attributes& attrs, const std::string& name,
                                         std::size_t count, const std::string& op,
                                         const std::vector<std::int64_t>& fallback) {
  if (!attrs.has(name)) return fallback;
  std::vector<std::int64_t> values = attrs.get_ints(name);
  if (values.size() != count) {
    // A length that describes 1-d or 3-d spatial axes is an unsupported op, not a typo (`op`
    // is empty once the rank is known to be 2 from kernel_shape).
    const bool is_pads = name == "pads";
    const std::size_t rank = is_pads ? values.size() / 2 : values.size();
    const bool whole = !is_pads || values.size() % 2 == 0;
    REFOLD_CHECK(op.empty() || !whole || (rank != 1 && rank != 3),
                 "unsupported: {}-d {} ({} has {} values; refold runs 2-d {} on 4-d tensors)", rank,
                 op, name, values.size(), op);
    fail("{} must have {} values, got {} ([{}])", name, count, values.size(),
         fmt::join(values, ", "));
  }
  return values;
}

void check_2d(std::int64_t rank, const std::string& op, const std::string& what) {
  if (rank == 4) return;
  REFOLD_CHECK(rank < 3, "unsupported: {}-d {} ({} is {}-d; refold runs 2-d {} on 4-d tensors)",
               rank - 2, op, what, rank, op);
  fail("{} must be 4-d, got {}-d", what, rank);
}

WindowAttrs read_window_attrs(const graph::Node& node, const std::string& op) {
  const graph::Attributes& a = node.attributes;
  WindowAttrs out;
  if (a.has("kernel_shape")) {
    const auto k = ints_of_length(a, "kernel_shape", 2, op, {});
    REFOLD_CHECK(k[0] > 0 && k[1] > 0, "kernel_shape must be positive (got [{}])",
                 fmt::join(k, ", "));
    out.kernel_shape = Size2d(k[0], k[1]);
  }
  // With a 2-d kernel_shape, a wrong length elsewhere is a plain length error.
  const std::string rank_op = out.kernel_shape ? std::string() : op;
  const auto s = ints_of_length(a, "strides", 2, rank_op, {1, 1});
  REFOLD_CHECK(s[0] > 0 && s[1] > 0, "strides must be positive (got [{}])", fmt::join(s, ", "));
  out.strides = Size2d(s[0], s[1]);
  const auto d = ints_of_length(a, "dilations", 2, rank_op, {1, 1});
  REFOLD_CHECK(d[0] > 0 && d[1] > 0, "dilations must be positive (got [{}])", fmt::join(d, ", "));
  out.dilations = Size2d(d[0], d[1]);
  // ONNX pads = [x1_begin, x2_begin, x1_end, x2_end] = [top, left, bottom, right].
  const auto p = ints_of_length(a, "pads", 4, rank_op, {0, 0, 0, 0});
  REFOLD_CHECK(p[0] >= 0 && p[1] >= 0 && p[2] >= 0 && p[3] >= 0,
               "pads must be non-negative (got [{}])", fmt::join(p, ", "));
  out.padding.pads = {p[0], p[1], p[2], p[3]};

  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") {
    out.padding.mode = AutoPad::NotSet;
  } else if (auto_pad == "VALID") {
    out.padding.mode = AutoPad::Valid;
  } else if (auto_pad == "SAME_UPPER") {
    out.padding.mode = AutoPad::SameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    out.padding.mode = AutoPad::SameLower;
  } else {
    fail("unknown auto_pad '{}' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)", auto_pad);
  }
  // The spec: "auto_pad … cannot be used simultaneously with pads". All-zero pads say nothing,
  // so they are tolerated (some exporters write them).
  const bool nonzero_pads = p[0] != 0 || p[1] != 0 || p[2] != 0 || p[3] != 0;
  REFOLD_CHECK(out.padding.mode == AutoPad::NotSet || !nonzero_pads,
               "auto_pad {} cannot be used together with pads [{}]", auto_pad, fmt::join(p, ", "));
  return out;
}

}  // namespace refold::ops
