// Builders for the shape arithmetic: Shape, Gather, Slice, Expand, ConstantOfShape, Range,
// ScatterND.
#include "core/check.h"
#include "onnx/ops/tensor_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/shape_ops.h"

namespace refold::onnx::ops {

nn::ModulePtr build_shape(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& a = context.node.attributes;
  std::optional<std::int64_t> end;
  if (a.has("end")) end = a.get_int("end", 0);
  return std::make_shared<graph::ops::ShapeOf>(a.get_int("start", 0), end);
}

nn::ModulePtr build_gather(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  const std::int64_t axis = context.node.attributes.get_int("axis", 0);
  if (auto data = constant_input(context, 0)) {
    const std::int64_t rank = data->dim();
    REFOLD_CHECK(axis >= -rank && axis < rank, "axis {} out of range for rank {}", axis, rank);
  }
  if (auto indices = constant_input(context, 1))
    REFOLD_CHECK(indices->dtype() == DType::Int64, "indices have dtype {}; expected int64",
                 dtype_name(indices->dtype()));
  return std::make_shared<graph::ops::Gather>(axis);
}

// Slice-10+: starts, ends, axes, steps are inputs; before: the starts/ends/axes attributes.
nn::ModulePtr build_slice(const BuildContext& context) {
  const auto& a = context.node.attributes;
  if (context.opset < 10) {
    check_arity(context.node, 1, 1, 1);
    REFOLD_CHECK(a.has("starts") && a.has("ends"), "the starts and ends attributes are required");
    graph::ops::SliceSpec spec{
        a.get_ints("starts"), a.get_ints("ends"), a.get_ints("axes", {}), {}};
    graph::ops::check_slice_spec(spec, -1);
    return std::make_shared<graph::ops::Slice>(std::move(spec));
  }
  check_arity(context.node, 3, 5, 1);
  graph::ops::SliceSpec spec;
  const auto starts = constant_ints(context, 1, "starts");
  const auto ends = constant_ints(context, 2, "ends");
  const auto axes = constant_ints(context, 3, "axes");
  const auto steps = constant_ints(context, 4, "steps");
  if (starts && ends && (axes || input_name(context.node, 3).empty()) &&
      (steps || input_name(context.node, 4).empty())) {
    spec = {*starts, *ends, axes.value_or(std::vector<std::int64_t>{}),
            steps.value_or(std::vector<std::int64_t>{})};
    graph::ops::check_slice_spec(spec, -1);
  } else if (steps) {
    graph::ops::check_slice_spec({*steps, *steps, {}, *steps}, -1);  // steps ≠ 0
  }
  return std::make_shared<graph::ops::Slice>();
}

nn::ModulePtr build_expand(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  if (auto shape = constant_ints(context, 1, "shape"))
    for (std::int64_t s : *shape)
      REFOLD_CHECK(s >= 0, "shape [{}] has a negative size", fmt::join(*shape, ", "));
  return std::make_shared<graph::ops::Expand>();
}

nn::ModulePtr build_constant_of_shape(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  Tensor value = context.node.attributes.get_tensor("value");
  REFOLD_CHECK(!value.defined() || value.numel() == 1,
               "value must hold one element, got shape [{}]", fmt::join(value.sizes(), ", "));
  if (auto shape = constant_ints(context, 0, "shape"))
    for (std::int64_t s : *shape)
      REFOLD_CHECK(s >= 0, "shape [{}] has a negative size", fmt::join(*shape, ", "));
  return std::make_shared<graph::ops::ConstantOfShape>(value);
}

nn::ModulePtr build_range(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  return std::make_shared<graph::ops::Range>();
}

nn::ModulePtr build_scatter_nd(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  const std::string reduction = context.node.attributes.get_string("reduction", "none");
  REFOLD_CHECK(reduction == "none",
               "unsupported: reduction '{}' (refold implements reduction 'none')", reduction);
  return std::make_shared<graph::ops::ScatterND>();
}

}  // namespace refold::onnx::ops
