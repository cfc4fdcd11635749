#include "refold/graph/ops/reshape.h"

#include <algorithm>
#include <span>

#include "core/check.h"
#include "core/checked_math.h"
#include "graph/ops/tensor_values.h"

namespace refold::graph::ops {

void check_reshape_target(const std::vector<std::int64_t>& shape, bool allowzero) {
  const auto infer = std::count(shape.begin(), shape.end(), -1);
  REFOLD_CHECK(infer <= 1, "shape [{}] has more than one -1", fmt::join(shape, ", "));
  for (std::int64_t s : shape)
    REFOLD_CHECK(s >= -1, "invalid size {} in shape [{}]", s, fmt::join(shape, ", "));
  REFOLD_CHECK(!allowzero || infer == 0 || std::count(shape.begin(), shape.end(), 0) == 0,
               "shape [{}] has both 0 and -1 with allowzero=1 (the -1 cannot be inferred)",
               fmt::join(shape, ", "));
}

// out[k] = shape[k], except: 0 (without allowzero) → sizes[k]; −1 → numel / prod(the others).
Shape reshape_sizes(const Shape& sizes, const std::vector<std::int64_t>& shape, bool allowzero) {
  check_reshape_target(shape, allowzero);
  const std::int64_t numel = checked_numel(sizes, "Reshape");
  Shape out(shape.begin(), shape.end());
  std::int64_t known = 1;
  std::ptrdiff_t infer = -1;
  for (std::size_t k = 0; k < out.size(); ++k) {
    if (out[k] == 0 && !allowzero) {
      REFOLD_CHECK(k < sizes.size(),
                   "Reshape: shape [{}] copies dimension {} (0) but the input [{}] has rank {}",
                   fmt::join(shape, ", "), k, fmt::join(sizes, ", "), sizes.size());
      out[k] = sizes[k];
    }
    if (out[k] == -1)
      infer = static_cast<std::ptrdiff_t>(k);
    else
      known = checked_mul(known, out[k], "Reshape");
  }
  if (infer >= 0) {
    REFOLD_CHECK(known != 0 && numel % known == 0,
                 "Reshape: cannot infer the -1 in [{}] for an input [{}] of {} elements",
                 fmt::join(shape, ", "), fmt::join(sizes, ", "), numel);
    out[static_cast<std::size_t>(infer)] = numel / known;
    known = numel;
  }
  REFOLD_CHECK(known == numel, "Reshape: shape [{}] gives {} elements, the input [{}] has {}",
               fmt::join(shape, ", "), known, fmt::join(sizes, ", "), numel);
  return out;
}

std::vector<Tensor> Reshape::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 2, "Reshape: expects 2 inputs (data, shape), got {}",
               inputs.size());
  REFOLD_CHECK(inputs[0].defined(), "Reshape: data is missing");
  const auto shape = int64_vector(inputs[1], "Reshape", "shape");
  return {inputs[0].reshape(reshape_sizes(inputs[0].sizes(), shape, allowzero_))};
}

Tensor flatten_2d(const Tensor& input, std::int64_t axis) {
  REFOLD_CHECK(input.defined(), "Flatten: input is missing");
  const std::int64_t rank = input.dim();
  REFOLD_CHECK(axis >= -rank && axis <= rank, "Flatten: axis {} out of range [{}, {}]", axis, -rank,
               rank);
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  const Shape& s = input.sizes();
  return input.reshape({checked_numel(std::span(s).first(a), "Flatten"),
                        checked_numel(std::span(s).subspan(a), "Flatten")});
}

std::vector<Tensor> Flatten::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1, "Flatten: expects 1 input, got {}", inputs.size());
  return {flatten_2d(inputs[0], axis_)};
}

namespace {

// Axes wrapped into [0, rank), each at most once.
std::vector<bool> axis_mask(const std::vector<std::int64_t>& axes, std::int64_t rank,
                            const char* op) {
  std::vector<bool> mask(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : axes) {
    REFOLD_CHECK(a >= -rank && a < rank, "{}: axis {} out of range for rank {} (axes [{}])", op, a,
                 rank, fmt::join(axes, ", "));
    const auto w = static_cast<std::size_t>(a < 0 ? a + rank : a);
    REFOLD_CHECK(!mask[w], "{}: axis {} repeated in axes [{}]", op, a, fmt::join(axes, ", "));
    mask[w] = true;
  }
  return mask;
}

// The axes: the attribute when the op was built with one, else input 1 (optional for Squeeze).
std::vector<std::int64_t> axes_of(const std::optional<std::vector<std::int64_t>>& attribute,
                                  const std::vector<Tensor>& inputs, const char* op,
                                  bool required) {
  REFOLD_CHECK(!inputs.empty() && inputs.size() <= 2, "{}: expects 1 or 2 inputs, got {}", op,
               inputs.size());
  REFOLD_CHECK(inputs[0].defined(), "{}: data is missing", op);
  if (attribute) return *attribute;
  if (inputs.size() < 2 || !inputs[1].defined()) {
    REFOLD_CHECK(!required, "{}: axes are missing", op);
    return {};
  }
  return int64_vector(inputs[1], op, "axes");
}

}  // namespace

Shape squeeze_sizes(const Shape& sizes, const std::vector<std::int64_t>& axes) {
  const auto rank = static_cast<std::int64_t>(sizes.size());
  const std::vector<bool> mask = axis_mask(axes, rank, "Squeeze");
  Shape out;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (axes.empty() ? sizes[d] == 1 : mask[d]) {
      REFOLD_CHECK(sizes[d] == 1, "Squeeze: dimension {} of [{}] has size {}, not 1", d,
                   fmt::join(sizes, ", "), sizes[d]);
      continue;
    }
    out.push_back(sizes[d]);
  }
  return out;
}

Shape unsqueeze_sizes(const Shape& sizes, const std::vector<std::int64_t>& axes) {
  REFOLD_CHECK(!axes.empty(), "Unsqueeze: axes are empty");
  const auto rank = static_cast<std::int64_t>(sizes.size() + axes.size());
  const std::vector<bool> mask = axis_mask(axes, rank, "Unsqueeze");
  Shape out;
  auto next = sizes.begin();
  for (std::size_t d = 0; d < mask.size(); ++d) out.push_back(mask[d] ? 1 : *next++);
  return out;
}

std::vector<Tensor> Squeeze::run(const std::vector<Tensor>& inputs) {
  const auto axes = axes_of(axes_, inputs, "Squeeze", false);
  return {inputs[0].reshape(squeeze_sizes(inputs[0].sizes(), axes))};
}

std::vector<Tensor> Unsqueeze::run(const std::vector<Tensor>& inputs) {
  const auto axes = axes_of(axes_, inputs, "Unsqueeze", true);
  return {inputs[0].reshape(unsqueeze_sizes(inputs[0].sizes(), axes))};
}

}  // namespace refold::graph::ops
