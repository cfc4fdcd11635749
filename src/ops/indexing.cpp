// Builders for the shape arithmetic and indexing: Shape, Gather, GatherElements, Slice, Expand,
// Tile, ConstantOfShape, Range, GatherND, ScatterND, ScatterElements (and Scatter, its opset 9
// name), Trilu, EyeLike.
#include "ops/indexing.h"

#include <algorithm>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/gather.h"
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

std::vector<Tensor> Gather::moved(const std::vector<Tensor>& inputs, bool views) const {
  expect_inputs(inputs, 2, 2, "Gather");
  const Tensor& data = inputs[0];
  const reference::GatherIndices g = reference::gather_indices(data, inputs[1], axis_);
  const std::vector<std::int64_t>& index = g.values;
  // index[j] = index[0] + j·step, step ≥ 1: data's axis sliced from index[0] by step.
  std::int64_t step = index.size() > 1 ? index[1] - index[0] : 1;
  for (std::size_t j = 1; j < index.size() && step >= 1; ++j)
    if (index[j] - index[j - 1] != step) step = 0;
  if (!index.empty() && step >= 1) {
    std::vector<reference::SliceDim> dims(static_cast<std::size_t>(data.dim()));
    for (std::size_t d = 0; d < dims.size(); ++d) dims[d] = {0, 1, data.sizes()[d]};
    dims[static_cast<std::size_t>(g.axis)] = {index[0], step,
                                              static_cast<std::int64_t>(index.size())};
    Tensor sliced = views ? reference::slice_view(data, dims) : Tensor();
    if (!sliced.defined()) sliced = reference::slice(data, dims);
    return {reshaped(sliced, g.out_sizes, views)};
  }
  // Rows are copied from data dense in logical order: other strides (a channels_last
  // activation, a transposed view) are made so first, one pass where the reference's walk
  // through every element's index took 10× longer (VOLO's unfold, from NHWC: 3.7 ms each).
  return {dispatch("Gather",
                   {{"native",
                     [&](std::string* declined) {
                       return native::gather(data.contiguous(), index, g.axis, g.out_sizes,
                                             declined);
                     }}},
                   [&] { return reference::gather(data, inputs[1], axis_); })};
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

Tensor slice(const Tensor& data, const SliceSpec& spec, bool view) {
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
  if (view) {
    if (Tensor v = reference::slice_view(data, dims); v.defined()) return v;
  }
  return reference::slice(data, dims);
}

std::vector<Tensor> Slice::moved(const std::vector<Tensor>& inputs, bool views) const {
  if (attributes_) {
    expect_inputs(inputs, 1, 1, "Slice");
    return {slice(inputs[0], *attributes_, views)};
  }
  expect_inputs(inputs, 3, 5, "Slice");
  SliceSpec spec;
  spec.starts = int64_vector(inputs[1], "Slice", "starts");
  spec.ends = int64_vector(inputs[2], "Slice", "ends");
  if (inputs.size() > 3 && inputs[3].defined())
    spec.axes = int64_vector(inputs[3], "Slice", "axes");
  if (inputs.size() > 4 && inputs[4].defined())
    spec.steps = int64_vector(inputs[4], "Slice", "steps");
  return {slice(inputs[0], spec, views)};
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

std::vector<Tensor> GatherND::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 2, 2, "GatherND");
  return {reference::gather_nd(inputs[0], inputs[1], batch_dims_)};
}

std::shared_ptr<const native::ScatterPlan> ScatterND::plan_for(const Tensor& data,
                                                               const Tensor& indices) {
  if (!constant_indices_)
    return std::make_shared<const native::ScatterPlan>(native::scatter_plan(data.sizes(), indices));
  const std::lock_guard<std::mutex> lock(mutex_);
  if (plan_ == nullptr || plan_indices_ != indices.data_ptr() ||
      plan_->data_sizes != data.sizes()) {
    plan_ =
        std::make_shared<const native::ScatterPlan>(native::scatter_plan(data.sizes(), indices));
    plan_indices_ = indices.data_ptr();
  }
  return plan_;
}

std::vector<Tensor> ScatterND::run(const std::vector<Tensor>& inputs) {
  expect_inputs(inputs, 3, 3, "ScatterND");
  const Tensor& data = inputs[0];
  const Tensor& indices = inputs[1];
  const Tensor& updates = inputs[2];
  reference::check_scatter_nd(data, indices, updates);
  return {dispatch("ScatterND",
                   {{"native",
                     [&](std::string* declined) {
                       return native::scatter_nd(data, updates, *plan_for(data, indices), declined);
                     }}},
                   [&] { return reference::scatter_nd(data, indices, updates); })};
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

// Tile(input, repeats): repeats int64, one per dimension.
class Tile : public graph::Op {
 public:
  Tile() : Op("Tile") {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    expect_inputs(inputs, 2, 2, "Tile");
    return {reference::tile(inputs[0], int64_vector(inputs[1], "Tile", "repeats"))};
  }
};

class GatherElements : public graph::Op {
 public:
  explicit GatherElements(std::int64_t axis) : Op("GatherElements"), axis_(axis) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    expect_inputs(inputs, 2, 2, "GatherElements");
    return {reference::gather_elements(inputs[0], inputs[1], axis_)};
  }

 private:
  std::int64_t axis_;
};

class ScatterElements : public graph::Op {
 public:
  ScatterElements(std::string op, std::int64_t axis, reference::ScatterReduction reduction)
      : Op(std::move(op)), axis_(axis), reduction_(reduction) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    expect_inputs(inputs, 3, 3, type_name().c_str());
    return {reference::scatter_elements(inputs[0], inputs[1], inputs[2], axis_, reduction_)};
  }

 private:
  std::int64_t axis_;
  reference::ScatterReduction reduction_;
};

// Trilu(input[, k]): k an int64 scalar, 0 when absent.
class Trilu : public graph::Op {
 public:
  explicit Trilu(bool upper) : Op("Trilu"), upper_(upper) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    expect_inputs(inputs, 1, 2, "Trilu");
    std::int64_t k = 0;
    if (inputs.size() > 1 && inputs[1].defined()) {
      const auto values = int64_vector(inputs[1], "Trilu", "k");
      REFOLD_CHECK(values.size() == 1, "Trilu: k must be a scalar, got {} values", values.size());
      k = values[0];
    }
    return {reference::trilu(inputs[0], k, upper_)};
  }

 private:
  bool upper_;
};

// EyeLike(input): the 2-d input's shape, 1 on the k-th diagonal (j − i = k), else 0; the
// `dtype` attribute's type, or the input's.
class EyeLike : public graph::Op {
 public:
  EyeLike(std::int64_t k, std::optional<DType> dtype) : Op("EyeLike"), k_(k), dtype_(dtype) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    expect_inputs(inputs, 1, 1, "EyeLike");
    const Tensor& x = inputs[0];
    REFOLD_CHECK(x.dim() == 2, "EyeLike: the input must be 2-d, got shape [{}]",
                 fmt::join(x.sizes(), ", "));
    return {reference::eye(x.size(0), x.size(1), k_, dtype_.value_or(x.dtype()))};
  }

 private:
  std::int64_t k_;
  std::optional<DType> dtype_;
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

// Gather, GatherElements, ScatterElements: the axis attribute (default 0), checked against a
// constant data's rank; constant indices must be int64.
std::int64_t indexing_axis(const BuildContext& context) {
  const std::int64_t axis = context.node.attributes.get_int("axis", 0);
  if (auto data = constant_input(context, 0)) {
    const std::int64_t rank = data->dim();
    REFOLD_CHECK(axis >= -rank && axis < rank, "axis {} out of range for rank {}", axis, rank);
  }
  if (auto indices = constant_input(context, 1))
    REFOLD_CHECK(indices->dtype() == DType::Int64, "indices have dtype {}; expected int64",
                 dtype_name(indices->dtype()));
  return axis;
}

nn::ModulePtr build_gather(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<Gather>(indexing_axis(context));
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

// GatherND-11; GatherND-12 adds batch_dims (default 0).
nn::ModulePtr build_gather_nd(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  const std::int64_t batch_dims = context.node.attributes.get_int("batch_dims", 0);
  REFOLD_CHECK(batch_dims >= 0, "batch_dims must be non-negative (got {})", batch_dims);
  return std::make_shared<GatherND>(batch_dims);
}

nn::ModulePtr build_scatter_nd(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  const std::string reduction = context.node.attributes.get_string("reduction", "none");
  REFOLD_CHECK(reduction == "none",
               "unsupported: reduction '{}' (refold implements reduction 'none')", reduction);
  return std::make_shared<ScatterND>(context.graph.is_constant(context.node.inputs[1]));
}

nn::ModulePtr build_tile(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  if (auto repeats = constant_ints(context, 1, "repeats")) {
    for (std::int64_t r : *repeats)
      REFOLD_CHECK(r >= 0, "repeats [{}] has a negative value", fmt::join(*repeats, ", "));
    if (auto input = constant_input(context, 0))
      REFOLD_CHECK(static_cast<std::int64_t>(repeats->size()) == input->dim(),
                   "repeats [{}] has {} values for a {}-d input", fmt::join(*repeats, ", "),
                   repeats->size(), input->dim());
  }
  return std::make_shared<Tile>();
}

nn::ModulePtr build_gather_elements(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<GatherElements>(indexing_axis(context));
}

// ScatterElements-16 adds reduction add/mul, 18 max/min; Scatter (opset 9–10) is ScatterElements
// without it.
nn::ModulePtr build_scatter_elements(const BuildContext& context) {
  check_arity(context.node, 3, 3, 1);
  const std::string reduction = context.node.attributes.get_string("reduction", "none");
  using R = reference::ScatterReduction;
  R r = R::None;
  if (reduction == "add") {
    r = R::Add;
  } else if (reduction == "mul") {
    r = R::Mul;
  } else if (reduction == "max") {
    r = R::Max;
  } else if (reduction == "min") {
    r = R::Min;
  } else {
    REFOLD_CHECK(reduction == "none",
                 "unknown reduction '{}' (expected none, add, mul, max or min)", reduction);
  }
  return std::make_shared<ScatterElements>(context.node.op_type, indexing_axis(context), r);
}

// EyeLike's dtype (TensorProto.DataType): 1 float, 16 bfloat16, 7 int64, 6 int32 and 9 bool
// (both stored as int64); absent: the input's.
nn::ModulePtr build_eye_like(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  const auto& a = context.node.attributes;
  std::optional<DType> dtype;
  if (a.has("dtype")) {
    const std::int64_t t = a.get_int("dtype", 0);
    const std::optional<reference::CastTarget> target = reference::cast_target_of(t);
    REFOLD_CHECK(target.has_value(),
                 "unsupported: dtype {} (refold makes float (1), bfloat16 (16), int64 (7), int32 "
                 "(6) and bool (9))",
                 t);
    dtype = reference::storage_dtype(*target);
  }
  return std::make_shared<EyeLike>(a.get_int("k", 0), dtype);
}

nn::ModulePtr build_trilu(const BuildContext& context) {
  check_arity(context.node, 1, 2, 1);
  const std::int64_t upper = context.node.attributes.get_int("upper", 1);
  REFOLD_CHECK(upper == 0 || upper == 1, "upper must be 0 or 1 (got {})", upper);
  if (auto k = constant_ints(context, 1, "k"))
    REFOLD_CHECK(k->size() == 1, "k must be a scalar, got {} values", k->size());
  return std::make_shared<Trilu>(upper == 1);
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
      {"GatherND", 11, build_gather_nd, LayoutRule::Fresh},
      {"ScatterND", 11, build_scatter_nd},  // v16 adds reduction (none only here)
      {"Tile", 6, build_tile},              // v6: repeats became an input
      {"GatherElements", 11, build_gather_elements, LayoutRule::Fresh},
      {"ScatterElements", 11, build_scatter_elements},  // v16 add/mul, v18 max/min
      {"Scatter", 9, build_scatter_elements},           // ScatterElements' opset 9–10 name
      {"Trilu", 14, build_trilu},
      {"EyeLike", 9, build_eye_like, LayoutRule::Fresh, nullptr, ShapeRule::InputShapesOnly},
  };
  return table;
}

}  // namespace refold::ops
