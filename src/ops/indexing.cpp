// Builders for the shape arithmetic: Shape, Gather, Slice, Expand, ConstantOfShape, Range,
// ScatterND.
#include "ops/indexing.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "ops/tensor_values.h"
#include "ops/window.h"

namespace refold::ops {

namespace {

void expect_inputs(const std::vector<Tensor>& inputs, std::size_t min, std::size_t max,
                   const char* op) {
  REFOLD_CHECK(inputs.size() >= min && inputs.size() <= max, "{}: expects {} to {} inputs, got {}",
               op, min, max, inputs.size());
  for (std::size_t i = 0; i < min; ++i)
    REFOLD_CHECK(inputs[i].defined(), "{}: input {} is missing", op, i);
}

}  // namespace

// Shape-15: start/end clamp like Slice's (negative adds the rank, then [0, rank]).
std::vector<Tensor> ShapeOf::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 1, 1, "Shape");
  const Shape& sizes = inputs[0].sizes();
  const auto rank = static_cast<std::int64_t>(sizes.size());
  auto clamp = [&](std::int64_t v) {
    return std::clamp<std::int64_t>(v < 0 ? v + rank : v, 0, rank);
  };
  const std::int64_t begin = clamp(start_);
  const std::int64_t end = std::max(begin, clamp(end_.value_or(rank)));
  Tensor out = empty({end - begin}, DType::Int64);
  std::copy(sizes.begin() + begin, sizes.begin() + end, out.data<std::int64_t>());
  return {out};
}

std::vector<Tensor> Gather::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 2, 2, "Gather");
  return {reference::gather(inputs[0], inputs[1], axis_)};
}

void check_slice_spec(const SliceSpec& spec, std::int64_t rank) {
  const std::size_t n = spec.starts.size();
  REFOLD_CHECK(spec.ends.size() == n, "{} starts but {} ends", n, spec.ends.size());
  REFOLD_CHECK(spec.axes.empty() || spec.axes.size() == n, "{} starts but {} axes", n,
               spec.axes.size());
  REFOLD_CHECK(spec.steps.empty() || spec.steps.size() == n, "{} starts but {} steps", n,
               spec.steps.size());
  for (std::int64_t s : spec.steps)
    REFOLD_CHECK(s != 0, "steps [{}] contain 0", fmt::join(spec.steps, ", "));
  if (rank < 0) return;
  REFOLD_CHECK(!spec.axes.empty() || static_cast<std::int64_t>(n) <= rank,
               "{} starts for a {}-d input", n, rank);
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::int64_t a : spec.axes) {
    REFOLD_CHECK(a >= -rank && a < rank, "axis {} out of range for rank {}", a, rank);
    const auto w = static_cast<std::size_t>(a < 0 ? a + rank : a);
    REFOLD_CHECK(!seen[w], "axis {} repeated in axes [{}]", a, fmt::join(spec.axes, ", "));
    seen[w] = true;
  }
}

Tensor slice(const Tensor& data, const SliceSpec& spec) {
  const std::int64_t rank = data.dim();
  check_slice_spec(spec, rank);
  std::vector<reference::SliceDim> dims(static_cast<std::size_t>(rank));
  for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = {0, 1, data.sizes()[d]};
  for (std::size_t k = 0; k < spec.starts.size(); ++k) {
    const std::int64_t a = spec.axes.empty() ? static_cast<std::int64_t>(k) : spec.axes[k];
    const auto d = static_cast<std::size_t>(a < 0 ? a + rank : a);
    dims[d] = reference::resolve_slice(spec.starts[k], spec.ends[k],
                                       spec.steps.empty() ? 1 : spec.steps[k], data.sizes()[d]);
  }
  return reference::slice(data, dims);
}

std::vector<Tensor> Slice::run(const std::vector<Tensor>& inputs) {
  if (attributes_) {
    expect_inputs(inputs, 1, 1, "Slice");
    return {slice(inputs[0], *attributes_)};
  }
  expect_inputs(inputs, 3, 5, "Slice");
  SliceSpec spec;
  spec.starts = int64_vector(inputs[1], "Slice", "starts");
  spec.ends = int64_vector(inputs[2], "Slice", "ends");
  if (inputs.size() > 3 && inputs[3].defined())
    spec.axes = int64_vector(inputs[3], "Slice", "axes");
  if (inputs.size() > 4 && inputs[4].defined())
    spec.steps = int64_vector(inputs[4], "Slice", "steps");
  return {slice(inputs[0], spec)};
}

std::vector<Tensor> Expand::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 2, 2, "Expand");
  const auto shape = int64_vector(inputs[1], "Expand", "shape");
  return {reference::expand(inputs[0], Shape(shape.begin(), shape.end()))};
}

ConstantOfShape::ConstantOfShape(Tensor value) : Op("ConstantOfShape"), value_(std::move(value)) {
  if (!value_.defined()) value_ = zeros({1});
  REFOLD_CHECK(value_.numel() == 1, "ConstantOfShape: value must hold one element, got [{}]",
               fmt::join(value_.sizes(), ", "));
}

std::vector<Tensor> ConstantOfShape::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 1, 1, "ConstantOfShape");
  const auto shape = int64_vector(inputs[0], "ConstantOfShape", "shape");
  return {reference::constant_of_shape(Shape(shape.begin(), shape.end()), value_)};
}

std::vector<Tensor> Range::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 3, 3, "Range");
  return {reference::range(inputs[0], inputs[1], inputs[2])};
}

std::vector<Tensor> ScatterND::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 3, 3, "ScatterND");
  return {reference::scatter_nd(inputs[0], inputs[1], inputs[2])};
}

// Size: the element count, an int64 scalar.
class Size : public graph::Op {
 public:
  Size() : Op("Size") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    expect_inputs(inputs, 1, 1, "Size");
    Tensor size = empty({}, DType::Int64);
    *size.data<std::int64_t>() = inputs[0].numel();
    return {size};
  }
};

nn::ModulePtr build_size(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  return std::make_shared<Size>();
}

nn::ModulePtr build_shape(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& a = context.node.attributes;
  std::optional<std::int64_t> end;
  if (a.has("end")) end = a.get_int("end", 0);
  return std::make_shared<ShapeOf>(a.get_int("start", 0), end);
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
  return std::make_shared<Gather>(axis);
}

// Slice-10+: starts, ends, axes, steps are inputs; before: the starts/ends/axes attributes.
nn::ModulePtr build_slice(const BuildContext& context) {
  const auto& a = context.node.attributes;
  if (context.opset < 10) {
    check_arity(context.node, 1, 1, 1);
    REFOLD_CHECK(a.has("starts") && a.has("ends"), "the starts and ends attributes are required");
    SliceSpec spec{a.get_ints("starts"), a.get_ints("ends"), a.get_ints("axes", {}), {}};
    check_slice_spec(spec, -1);
    return std::make_shared<Slice>(std::move(spec));
  }
  check_arity(context.node, 3, 5, 1);
  SliceSpec spec;
  const auto starts = constant_ints(context, 1, "starts");
  const auto ends = constant_ints(context, 2, "ends");
  const auto axes = constant_ints(context, 3, "axes");
  const auto steps = constant_ints(context, 4, "steps");
  if (starts && ends && (axes || input_name(context.node, 3).empty()) &&
      (steps || input_name(context.node, 4).empty())) {
    spec = {*starts, *ends, axes.value_or(std::vector<std::int64_t>{}),
            steps.value_or(std::vector<std::int64_t>{})};
    check_slice_spec(spec, -1);
  } else if (steps) {
    check_slice_spec({*steps, *steps, {}, *steps}, -1);  // steps ≠ 0
  }
  return std::make_shared<Slice>();
}

nn::ModulePtr build_expand(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  if (auto shape = constant_ints(context, 1, "shape"))
    for (std::int64_t s : *shape)
      REFOLD_CHECK(s >= 0, "shape [{}] has a negative size", fmt::join(*shape, ", "));
  return std::make_shared<Expand>();
}

nn::ModulePtr build_constant_of_shape(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  Tensor value = context.node.attributes.get_tensor("value");
  REFOLD_CHECK(!value.defined() || value.numel() == 1,
               "value must hold one element, got shape [{}]", fmt::join(value.sizes(), ", "));
  if (auto shape = constant_ints(context, 0, "shape"))
    for (std::int64_t s : *shape)
      REFOLD_CHECK(s >= 0, "shape [{}] has a negative size", fmt::join(*shape, ", "));
  return std::make_shared<ConstantOfShape>(value);
}

nn::ModulePtr build_range(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  return std::make_shared<Range>();
}

nn::ModulePtr build_scatter_nd(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  const std::string reduction = context.node.attributes.get_string("reduction", "none");
  REFOLD_CHECK(reduction == "none",
               "unsupported: reduction '{}' (refold implements reduction 'none')", reduction);
  return std::make_shared<ScatterND>();
}

const std::vector<OpDef>& indexing_ops() {
  static const std::vector<OpDef> table = {
      {"Shape", 1, build_shape, LayoutRule::Fresh, nullptr,
       ShapeRule::InputShapesOnly},  // v15 adds start/end
      {"Size", 1, build_size, LayoutRule::Fresh, nullptr, ShapeRule::InputShapesOnly},
      {"Gather", 1, build_gather, LayoutRule::Fresh},
      {"Slice", 1, build_slice},  // v10: starts/ends/axes/steps became inputs
      {"Expand", 8, build_expand, LayoutRule::Fresh},
      {"ConstantOfShape", 9, build_constant_of_shape, LayoutRule::Fresh},
      {"Range", 11, build_range, LayoutRule::Fresh, nullptr, ShapeRule::ReadsFloatValues},
      {"ScatterND", 11, build_scatter_nd},  // v16 adds reduction (none only here)
  };
  return table;
}

}  // namespace refold::ops
