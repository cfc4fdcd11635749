// Builders for Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, DepthToSpace, Softmax.
#include <algorithm>

#include "core/check.h"
#include "onnx/ops/tensor_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/concat.h"
#include "refold/graph/ops/reshape.h"
#include "refold/graph/ops/softmax.h"
#include "refold/graph/ops/transpose.h"
#include "refold/nn/basic.h"

namespace refold::onnx::ops {

// Reshape-5+: (data, shape); allowzero from v14. A constant shape is checked now.
nn::ModulePtr build_reshape(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  const std::int64_t allowzero = context.node.attributes.get_int("allowzero", 0);
  REFOLD_CHECK(allowzero == 0 || allowzero == 1, "allowzero must be 0 or 1, got {}", allowzero);
  if (auto shape = constant_ints(context, 1, "shape"))
    graph::ops::check_reshape_target(*shape, allowzero == 1);
  return std::make_shared<graph::ops::Reshape>(allowzero == 1);
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
  return std::make_shared<graph::ops::Flatten>(axis);
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
  return std::make_shared<graph::ops::Squeeze>(squeeze_axes(context, false));
}

nn::ModulePtr build_unsqueeze(const BuildContext& context) {
  auto axes = squeeze_axes(context, true);
  REFOLD_CHECK(!axes || !axes->empty(), "axes is empty");
  return std::make_shared<graph::ops::Unsqueeze>(std::move(axes));
}

nn::ModulePtr build_transpose(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto perm = context.node.attributes.get_ints("perm", {});
  graph::ops::check_perm(perm);
  return std::make_shared<graph::ops::Transpose>(perm);
}

nn::ModulePtr build_concat(const BuildContext& context) {
  const graph::Node& node = context.node;
  REFOLD_CHECK(!node.inputs.empty(), "expects at least 1 input, got 0");
  for (std::size_t i = 0; i < node.inputs.size(); ++i)
    REFOLD_CHECK(!node.inputs[i].empty(), "input {} is empty", i);
  check_arity(node, node.inputs.size(), node.inputs.size(), 1);
  REFOLD_CHECK(node.attributes.has("axis"), "the axis attribute is required");
  return std::make_shared<graph::ops::Concat>(node.attributes.get_int("axis", 0));
}

// DepthToSpace: CRD is PixelShuffle (torch's layer); DCR (the default, and the only mode
// before opset 11) is the general op.
nn::ModulePtr build_depth_to_space(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& attrs = context.node.attributes;
  REFOLD_CHECK(attrs.has("blocksize"), "the blocksize attribute is required");
  const std::int64_t b = attrs.get_int("blocksize", 0);
  REFOLD_CHECK(b > 0, "blocksize must be positive, got {}", b);
  const std::string mode = attrs.get_string("mode", "DCR");
  REFOLD_CHECK(mode == "DCR" || mode == "CRD", "unknown mode '{}' (expected DCR or CRD)", mode);
  if (mode == "CRD") return std::make_shared<nn::PixelShuffle>(b);
  return std::make_shared<graph::ops::DepthToSpace>(b, graph::ops::DepthToSpace::Mode::DCR);
}

// Softmax-13: along `axis` (default −1); before 13: over the 2-d coercion at `axis` (default 1).
nn::ModulePtr build_softmax(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const bool coerce = context.opset < 13;
  const std::int64_t axis = context.node.attributes.get_int("axis", coerce ? 1 : -1);
  if (auto input = constant_input(context, 0)) {
    const std::int64_t rank = input->dim();
    REFOLD_CHECK(axis >= -rank && axis < rank + (coerce ? 1 : 0),
                 "axis {} out of range for rank {}", axis, rank);
  }
  return std::make_shared<graph::ops::Softmax>(axis, coerce);
}

}  // namespace refold::onnx::ops
