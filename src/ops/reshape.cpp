// Builders for Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, DepthToSpace, Softmax.
#include "ops/reshape.h"

#include <algorithm>
#include <span>

#include "core/check.h"
#include "core/checked_math.h"
#include "ops/concat.h"
#include "ops/op.h"
#include "ops/softmax.h"
#include "ops/tensor_values.h"
#include "ops/transpose.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/basic.h"

namespace refold::ops {

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

std::vector<Tensor> Reshape::moved(const std::vector<Tensor>& inputs, bool views) const {
  REFOLD_CHECK(inputs.size() == 2, "Reshape: expects 2 inputs (data, shape), got {}",
               inputs.size());
  REFOLD_CHECK(inputs[0].defined(), "Reshape: data is missing");
  const auto shape = int64_vector(inputs[1], "Reshape", "shape");
  return {reshaped(inputs[0], reshape_sizes(inputs[0].sizes(), shape, allowzero_), views)};
}

Shape flattened_sizes(const Shape& sizes, std::int64_t axis) {
  const auto rank = static_cast<std::int64_t>(sizes.size());
  REFOLD_CHECK(axis >= -rank && axis <= rank, "Flatten: axis {} out of range [{}, {}]", axis, -rank,
               rank);
  const auto a = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  return {checked_numel(std::span(sizes).first(a), "Flatten"),
          checked_numel(std::span(sizes).subspan(a), "Flatten")};
}

std::vector<Tensor> Flatten::moved(const std::vector<Tensor>& inputs, bool views) const {
  REFOLD_CHECK(inputs.size() == 1, "Flatten: expects 1 input, got {}", inputs.size());
  REFOLD_CHECK(inputs[0].defined(), "Flatten: input is missing");
  return {reshaped(inputs[0], flattened_sizes(inputs[0].sizes(), axis_), views)};
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

std::vector<Tensor> Squeeze::moved(const std::vector<Tensor>& inputs, bool views) const {
  const auto axes = axes_of(axes_, inputs, "Squeeze", false);
  return {reshaped(inputs[0], squeeze_sizes(inputs[0].sizes(), axes), views)};
}

std::vector<Tensor> Unsqueeze::moved(const std::vector<Tensor>& inputs, bool views) const {
  const auto axes = axes_of(axes_, inputs, "Unsqueeze", true);
  return {reshaped(inputs[0], unsqueeze_sizes(inputs[0].sizes(), axes), views)};
}

// Reshape-5+: (data, shape); allowzero from v14. A constant shape is checked now.
nn::ModulePtr build_reshape(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  const std::int64_t allowzero = context.node.attributes.get_int("allowzero", 0);
  REFOLD_CHECK(allowzero == 0 || allowzero == 1, "allowzero must be 0 or 1, got {}", allowzero);
  if (auto shape = constant_ints(context, 1, "shape")) check_reshape_target(*shape, allowzero == 1);
  return std::make_shared<Reshape>(allowzero == 1);
}

// Flatten-1+: [prod(dims[:axis]), prod(dims[axis:])], axis ∈ [−r, r]. The op reads the rank
// at run time (an activation's rank is unknown here): axis 1 of a 1-d [n] is [n, 1], which
// torch's flatten(1) (nn::Flatten) would refuse. A constant input is checked now.
nn::ModulePtr build_flatten(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const std::int64_t axis = context.node.attributes.get_int("axis", 1);
  if (auto input = constant_input(context, 0)) {
    const std::int64_t rank = input->dim();
    REFOLD_CHECK(axis >= -rank && axis <= rank, "axis {} out of range [{}, {}]", axis, -rank, rank);
  }
  return std::make_shared<Flatten>(axis);
}

namespace {

// Squeeze/Unsqueeze: `axes` is an attribute before opset 13 and an input from 13 on.
std::optional<std::vector<std::int64_t>> squeeze_axes(const BuildContext& context, bool required) {
  const auto& attrs = context.node.attributes;
  if (context.opset >= 13) {
    REFOLD_CHECK(!attrs.has("axes"), "axes is an input from opset 13, not an attribute (opset {})",
                 context.opset);
    check_arity(context.node, required ? 2 : 1, 2, 1);
    if (auto axes = constant_ints(context, 1, "axes")) {
      std::vector<std::int64_t> sorted = *axes;
      std::sort(sorted.begin(), sorted.end());
      REFOLD_CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end(),
                   "axes [{}] repeat an axis", fmt::join(*axes, ", "));
    }
    return std::nullopt;
  }
  check_arity(context.node, 1, 1, 1);
  REFOLD_CHECK(!required || attrs.has("axes"), "the axes attribute is required (opset {})",
               context.opset);
  if (!attrs.has("axes")) return std::vector<std::int64_t>{};
  return attrs.get_ints("axes");
}

}  // namespace

nn::ModulePtr build_squeeze(const BuildContext& context) {
  return std::make_shared<Squeeze>(squeeze_axes(context, false));
}

nn::ModulePtr build_unsqueeze(const BuildContext& context) {
  auto axes = squeeze_axes(context, true);
  REFOLD_CHECK(!axes || !axes->empty(), "axes is empty");
  return std::make_shared<Unsqueeze>(std::move(axes));
}

const std::vector<OpDef>& reshape_ops() {
  static const std::vector<OpDef> table = {
      {"Reshape", 5, build_reshape, LayoutRule::Fresh},  // v5: the shape became an input
      {"Flatten", 1, build_flatten, LayoutRule::Fresh},
      {"Squeeze", 1, build_squeeze, LayoutRule::Fresh},      // v13: axes became an input
      {"Unsqueeze", 1, build_unsqueeze, LayoutRule::Fresh},  // v13: axes became an input
  };
  return table;
}

}  // namespace refold::ops
