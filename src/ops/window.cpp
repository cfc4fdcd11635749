#include "ops/window.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <string>
#include <utility>

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
                                         std::size_t count,
                                         const std::vector<std::int64_t>& fallback) {
  if (!attrs.has(name)) return fallback;
  std::vector<std::int64_t> values = attrs.get_ints(name);
  REFOLD_CHECK(values.size() == count, "{} must have {} values, got {} ([{}])", name, count,
               values.size(), fmt::join(values, ", "));
  return values;
}

namespace {

AutoPad read_auto_pad(const graph::Attributes& a, const std::vector<std::int64_t>& pads) {
  const std::string auto_pad = a.get_string("auto_pad", "NOTSET");
  AutoPad mode = AutoPad::NotSet;
  if (auto_pad == "VALID") {
    mode = AutoPad::Valid;
  } else if (auto_pad == "SAME_UPPER") {
    mode = AutoPad::SameUpper;
  } else if (auto_pad == "SAME_LOWER") {
    mode = AutoPad::SameLower;
  } else if (auto_pad != "NOTSET") {
    fail("unknown auto_pad '{}' (expected NOTSET, VALID, SAME_UPPER or SAME_LOWER)", auto_pad);
  }
  // The spec: "auto_pad … cannot be used simultaneously with pads". All-zero pads say nothing,
  // so they are tolerated (some exporters write them).
  const bool nonzero_pads = std::any_of(pads.begin(), pads.end(), [](auto v) { return v != 0; });
  REFOLD_CHECK(mode == AutoPad::NotSet || !nonzero_pads,
               "auto_pad {} cannot be used together with pads [{}]", auto_pad,
               fmt::join(pads, ", "));
  return mode;
}

std::vector<std::int64_t> positive_ints(const graph::Attributes& a, const char* name,
                                        std::size_t count) {
  const auto v = ints_of_length(a, name, count, std::vector<std::int64_t>(count, 1));
  REFOLD_CHECK(std::all_of(v.begin(), v.end(), [](auto x) { return x > 0; }),
               "{} must be positive (got [{}])", name, fmt::join(v, ", "));
  return v;
}

}  // namespace

WindowAttrs read_window_attrs(const graph::Node& node) {
  const WindowNd nd = read_window_nd(node, 2);
  WindowAttrs out;
  if (nd.kernel_shape) out.kernel_shape = Size2d((*nd.kernel_shape)[0], (*nd.kernel_shape)[1]);
  out.strides = Size2d(nd.strides[0], nd.strides[1]);
  out.dilations = Size2d(nd.dilations[0], nd.dilations[1]);
  // ONNX pads = [x1_begin, x2_begin, x1_end, x2_end] = [top, left, bottom, right].
  out.padding.pads = {nd.pads[0], nd.pads[1], nd.pads[2], nd.pads[3]};
  out.padding.mode = nd.mode;
  return out;
}

std::size_t window_rank(const graph::Attributes& attrs) {
  for (const char* name : {"kernel_shape", "strides", "dilations"})
    if (attrs.has(name)) return attrs.get_ints(name).size();
  if (attrs.has("pads")) return attrs.get_ints("pads").size() / 2;
  return 0;
}

WindowNd read_window_nd(const graph::Node& node, std::size_t rank) {
  const graph::Attributes& a = node.attributes;
  WindowNd out;
  if (a.has("kernel_shape")) out.kernel_shape = positive_ints(a, "kernel_shape", rank);
  out.strides = positive_ints(a, "strides", rank);
  out.dilations = positive_ints(a, "dilations", rank);
  out.pads = ints_of_length(a, "pads", 2 * rank, std::vector<std::int64_t>(2 * rank, 0));
  REFOLD_CHECK(std::all_of(out.pads.begin(), out.pads.end(), [](auto v) { return v >= 0; }),
               "pads must be non-negative (got [{}])", fmt::join(out.pads, ", "));
  out.mode = read_auto_pad(a, out.pads);
  return out;
}

void WindowNd::resolve(const Shape& in, const std::vector<std::int64_t>& kernel,
                       std::vector<std::int64_t>& begin, std::vector<std::int64_t>& end) const {
  const std::size_t rank = strides.size();
  begin.assign(rank, 0);
  end.assign(rank, 0);
  for (std::size_t k = 0; k < rank; ++k) {
    if (mode == AutoPad::NotSet) {
      begin[k] = pads[k];
      end[k] = pads[k + rank];
    } else if (mode != AutoPad::Valid) {
      same_padding(in[k], kernel[k], strides[k], dilations[k], mode == AutoPad::SameUpper, begin[k],
                   end[k]);
    }
  }
}

graph::Node lift_1d_window(const graph::Node& node) {
  graph::Node lifted = node;
  graph::Attributes& a = lifted.attributes;
  // (name, values per axis, the values the unit axis gets)
  const std::vector<std::pair<const char*, std::int64_t>> unit = {{"kernel_shape", 1},
                                                                  {"strides", 1},
                                                                  {"dilations", 1},
                                                                  {"output_shape", 1},
                                                                  {"output_padding", 0}};
  for (const auto& [name, fill] : unit) {
    if (!a.has(name)) continue;
    std::vector<std::int64_t> v = a.get_ints(name);
    // output_shape may also be the whole [N, C, L], as exporters write it for 2-d.
    if (std::string(name) == "output_shape" && v.size() == 3)
      v.erase(v.begin(), v.begin() + 2);
    else
      v = ints_of_length(a, name, 1, {});
    a.set(name, std::vector<std::int64_t>{fill, v[0]});
  }
  if (a.has("pads")) {
    const auto p = ints_of_length(a, "pads", 2, {});
    a.set("pads", std::vector<std::int64_t>{0, p[0], 0, p[1]});
  }
  return lifted;
}

}  // namespace refold::ops
