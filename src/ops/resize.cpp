// Builders for Resize (opset 11+: modes nearest, linear and cubic; everything else is an explicit
// "unsupported" error listing what is, docs/reliability.md F27), Upsample (opsets 7–9) and
// GridSample (opset 16+): the ops that sample their input at computed coordinates.
#include "ops/resize.h"

#include <cmath>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/grid_sample.h"
#include "kernels/native/resize2d.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/op.h"
#include "ops/tensor_values.h"
#include "ops/window.h"

namespace refold::ops {

namespace {

bool given(const Tensor& t) { return t.defined() && t.numel() > 0; }

}  // namespace

ResizeGeometry resize_geometry(const Shape& sizes, const Tensor& scales, const Tensor& sizes_input,
                               const std::vector<std::int64_t>& axes_in) {
  const auto rank = static_cast<std::int64_t>(sizes.size());
  REFOLD_CHECK(!(given(scales) && given(sizes_input)),
               "Resize: both scales and sizes are given; exactly one is allowed");
  REFOLD_CHECK(given(scales) || given(sizes_input), "Resize: neither scales nor sizes is given");
  // The dimensions the inputs refer to: `axes`, or all of them.
  std::vector<std::size_t> axes;
  std::vector<bool> seen(sizes.size(), false);
  for (std::int64_t a : axes_in) {
    REFOLD_CHECK(a >= -rank && a < rank, "Resize: axis {} out of range for rank {}", a, rank);
    const auto w = static_cast<std::size_t>(a < 0 ? a + rank : a);
    REFOLD_CHECK(!seen[w], "Resize: axis {} repeated in axes [{}]", a, fmt::join(axes_in, ", "));
    seen[w] = true;
    axes.push_back(w);
  }
  if (axes_in.empty())
    for (std::size_t d = 0; d < sizes.size(); ++d) axes.push_back(d);
  ResizeGeometry g;
  g.sizes = sizes;
  g.scales.assign(sizes.size(), 1.0);
  for (std::int64_t s : sizes) g.lengths.push_back(static_cast<double>(s));
  if (given(scales)) {
    const std::vector<double> values = float_vector(scales, "Resize", "scales");
    REFOLD_CHECK(values.size() == axes.size(), "Resize: {} scales [{}] for {} axes of input [{}]",
                 values.size(), fmt::join(values, ", "), axes.size(), fmt::join(sizes, ", "));
    for (std::size_t k = 0; k < axes.size(); ++k) {
      const double s = values[k];
      REFOLD_CHECK(std::isfinite(s) && s > 0, "Resize: scale {} must be positive and finite", s);
      const double length = static_cast<double>(sizes[axes[k]]) * s;
      REFOLD_CHECK(length < 9.0e15, "Resize: scale {} makes dimension {} of size {} too large", s,
                   axes[k], sizes[axes[k]]);
      g.sizes[axes[k]] = static_cast<std::int64_t>(std::floor(length));
      g.scales[axes[k]] = s;
      g.lengths[axes[k]] = length;
    }
    return g;
  }
  const std::vector<std::int64_t> values = int64_vector(sizes_input, "Resize", "sizes");
  REFOLD_CHECK(values.size() == axes.size(), "Resize: {} sizes [{}] for {} axes of input [{}]",
               values.size(), fmt::join(values, ", "), axes.size(), fmt::join(sizes, ", "));
  for (std::size_t k = 0; k < axes.size(); ++k) {
    const std::size_t d = axes[k];
    REFOLD_CHECK(values[k] >= 0, "Resize: negative size {} in sizes [{}]", values[k],
                 fmt::join(values, ", "));
    REFOLD_CHECK(sizes[d] > 0 || values[k] == 0,
                 "Resize: dimension {} has size 0 and cannot be resized to {}", d, values[k]);
    g.sizes[d] = values[k];
    g.lengths[d] = static_cast<double>(values[k]);
    // An empty input or output dimension keeps scale 1 (nothing is sampled).
    g.scales[d] = sizes[d] > 0 && values[k] > 0
                      ? static_cast<double>(values[k]) / static_cast<double>(sizes[d])
                      : 1.0;
  }
  return g;
}

std::vector<Tensor> Resize::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(!inputs.empty() && inputs.size() <= 4,
               "Resize: expects 1 to 4 inputs (X, roi, scales, sizes), got {}", inputs.size());
  const Tensor& x = inputs[0];
  REFOLD_CHECK(x.defined(), "{}: X is missing", type_name());
  Tensor scales = inputs.size() > 2 ? inputs[2] : Tensor();
  const Tensor sizes = inputs.size() > 3 ? inputs[3] : Tensor();
  if (options_.upsample) {  // Upsample(X[, scales]): one scale per dimension
    const auto& attribute = options_.upsample_scales;
    scales = attribute.empty()
                 ? (inputs.size() > 1 ? inputs[1] : Tensor())
                 : from_values(attribute, {static_cast<std::int64_t>(attribute.size())});
    REFOLD_CHECK(scales.defined(), "Upsample: scales is missing");
  }
  const ResizeGeometry g = resize_geometry(x.sizes(), scales, sizes, options_.axes);
  const reference::ResizeParams& params = options_.params;
  // 4-d float32 nearest/linear over H and W on NCHW or NHWC: refold's AVX2 kernel
  // (kernels/native/resize2d.h); the rest, and what it declines, the reference.
  return {dispatch("resize",
                   {{"native",
                     [&](std::string* declined) {
                       return native::resize2d(x, g.sizes, g.scales, g.lengths, params, declined);
                     }}},
                   [&] { return reference::resize(x, g.sizes, g.scales, g.lengths, params); })};
}

namespace {

using Options = ResizeOptions;

Options::Mode parse_mode(const std::string& s) {
  if (s == "nearest") return Options::Mode::Nearest;
  if (s == "linear") return Options::Mode::Linear;
  if (s == "cubic") return Options::Mode::Cubic;
  fail("unknown mode '{}' (expected nearest, linear or cubic)", s);
}

Options::NearestMode parse_nearest_mode(const std::string& s) {
  if (s == "round_prefer_floor") return Options::NearestMode::RoundPreferFloor;
  if (s == "round_prefer_ceil") return Options::NearestMode::RoundPreferCeil;
  if (s == "floor") return Options::NearestMode::Floor;
  if (s == "ceil") return Options::NearestMode::Ceil;
  fail("unknown nearest_mode '{}' (expected round_prefer_floor, round_prefer_ceil, floor or ceil)",
       s);
}

Options::Coordinates parse_coordinates(const std::string& s) {
  if (s == "half_pixel") return Options::Coordinates::HalfPixel;
  if (s == "pytorch_half_pixel") return Options::Coordinates::PytorchHalfPixel;
  if (s == "asymmetric") return Options::Coordinates::Asymmetric;
  if (s == "tf_half_pixel_for_nn") return Options::Coordinates::TfHalfPixelForNn;
  if (s == "align_corners") return Options::Coordinates::AlignCorners;
  if (s == "half_pixel_symmetric") return Options::Coordinates::HalfPixelSymmetric;
  REFOLD_CHECK(s != "tf_crop_and_resize",
               "unsupported: coordinate_transformation_mode '{}' (refold implements half_pixel, "
               "pytorch_half_pixel, asymmetric, tf_half_pixel_for_nn, align_corners and "
               "half_pixel_symmetric)",
               s);
  fail("unknown coordinate_transformation_mode '{}'", s);
}

bool non_empty(const std::optional<Tensor>& t) { return t && t->numel() > 0; }

}  // namespace

nn::ModulePtr build_resize(const BuildContext& context) {
  const graph::Node& node = context.node;
  // v11–12 list roi and scales as required, but exporters write "" for an unused roi or
  // scales; only X is needed, the scales-or-sizes rule is checked below and at run time.
  check_arity(node, 1, 4, 1);
  const graph::Attributes& a = node.attributes;
  Options options;
  reference::ResizeParams& p = options.params;
  p.mode = parse_mode(a.get_string("mode", "nearest"));
  p.nearest = parse_nearest_mode(a.get_string("nearest_mode", "round_prefer_floor"));
  p.coordinates = parse_coordinates(a.get_string("coordinate_transformation_mode", "half_pixel"));
  const std::int64_t exclude_outside = a.get_int("exclude_outside", 0);
  REFOLD_CHECK(exclude_outside == 0 || exclude_outside == 1,
               "exclude_outside must be 0 or 1 (got {})", exclude_outside);
  p.exclude_outside = exclude_outside == 1;
  p.cubic_coeff_a = a.get_float("cubic_coeff_a", -0.75f);
  const std::int64_t antialias = a.get_int("antialias", 0);
  REFOLD_CHECK(antialias == 0 || antialias == 1, "antialias must be 0 or 1 (got {})", antialias);
  p.antialias = antialias == 1;
  const std::string policy = a.get_string("keep_aspect_ratio_policy", "stretch");
  REFOLD_CHECK(policy == "stretch",
               "unsupported: keep_aspect_ratio_policy '{}' (refold implements stretch)", policy);
  options.axes = a.get_ints("axes", {});

  // Exactly one of scales and sizes (F27); checked now when both are constants.
  const auto scales = constant_input(context, 2);
  const auto sizes = constant_input(context, 3);
  const bool scales_named = input_name(node, 2) != "";
  const bool sizes_named = input_name(node, 3) != "";
  REFOLD_CHECK(!(non_empty(scales) && non_empty(sizes)),
               "both scales and sizes are given; exactly one is allowed");
  REFOLD_CHECK(scales_named || sizes_named, "neither scales nor sizes is given");
  if ((!scales_named || (scales && !non_empty(scales))) &&
      (!sizes_named || (sizes && !non_empty(sizes))))
    fail("neither scales nor sizes is given (both are empty)");
  if (non_empty(scales)) {
    for (float s : scales->to_vector())
      REFOLD_CHECK(std::isfinite(s) && s > 0, "scales must be positive and finite (got [{}])",
                   fmt::join(scales->to_vector(), ", "));
  }
  if (non_empty(sizes)) constant_ints(context, 3, "sizes");  // dtype and rank checks
  return std::make_shared<Resize>(std::move(options));
}

// Upsample (deprecated at opset 10, where Resize replaced it): nearest or linear ("bilinear" in
// opset 7's spelling too), asymmetric coordinates; nearest takes the floor, so each input element
// repeats. scales: the attribute (opset 7–8) or input 1 (9), one per dimension, positive.
nn::ModulePtr build_upsample(const BuildContext& context) {
  const graph::Node& node = context.node;
  const graph::Attributes& a = node.attributes;
  Options options;
  options.upsample = true;
  options.params.coordinates = Options::Coordinates::Asymmetric;
  options.params.nearest = Options::NearestMode::Floor;
  const std::string mode = a.get_string("mode", "nearest");
  REFOLD_CHECK(mode == "nearest" || mode == "linear" || mode == "bilinear",
               "unknown mode '{}' (expected nearest or linear)", mode);
  options.params.mode = mode == "nearest" ? Options::Mode::Nearest : Options::Mode::Linear;
  std::optional<std::vector<float>> scales;
  if (context.opset < 9) {
    check_arity(node, 1, 1, 1);
    REFOLD_CHECK(a.has("scales"), "the scales attribute is required");
    scales = a.get_floats("scales");
    REFOLD_CHECK(!scales->empty(), "scales must not be empty");
    options.upsample_scales = *scales;
  } else {
    check_arity(node, 2, 2, 1);
    REFOLD_CHECK(!a.has("scales"), "scales is an input from opset 9, not an attribute");
    if (auto t = constant_input(context, 1)) {
      check_floating(*t, "scales");
      scales = t->to_vector();
    }
  }
  if (scales)
    for (float s : *scales)
      REFOLD_CHECK(std::isfinite(s) && s > 0, "scales must be positive and finite (got [{}])",
                   fmt::join(*scales, ", "));
  return std::make_shared<Resize>(std::move(options));
}

namespace {

// GridSample (reference::grid_sample has the math): X [N, C, D1…Dr] sampled at grid
// [N, O1…Or, r]. Opset 16 names the modes bilinear / bicubic and takes 4-d X; opset 20 names
// them linear / cubic and takes any rank (cubic still 4-d only).
class GridSample : public graph::Op {
 public:
  explicit GridSample(reference::GridSampleParams params) : Op("GridSample"), params_(params) {}
  std::vector<Tensor> run(const std::vector<Tensor>& in) override {
    REFOLD_CHECK(in.size() == 2 && in[0].defined() && in[1].defined(),
                 "GridSample: expects X and grid");
    // 4-d float32, nearest or linear: refold's kernel (native/grid_sample.h); else the reference.
    return {dispatch("grid_sample",
                     {{"native",
                       [&](std::string* declined) {
                         return native::grid_sample(in[0], in[1], params_, declined);
                       }}},
                     [&] { return reference::grid_sample(in[0], in[1], params_); })};
  }

 private:
  reference::GridSampleParams params_;
};

nn::ModulePtr build_grid_sample(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 2, 1);
  const graph::Attributes& a = node.attributes;
  using Mode = reference::GridSampleMode;
  using Padding = reference::GridSamplePadding;
  reference::GridSampleParams p;
  const bool v20 = context.opset >= 20;
  const std::string mode = a.get_string("mode", v20 ? "linear" : "bilinear");
  if (mode == (v20 ? "linear" : "bilinear")) {
    p.mode = Mode::Linear;
  } else if (mode == "nearest") {
    p.mode = Mode::Nearest;
  } else if (mode == (v20 ? "cubic" : "bicubic")) {
    p.mode = Mode::Cubic;
  } else {
    fail("unknown mode '{}' (expected {} at opset {})", mode,
         v20 ? "linear, nearest or cubic" : "bilinear, nearest or bicubic", context.opset);
  }
  const std::string padding = a.get_string("padding_mode", "zeros");
  if (padding == "zeros") {
    p.padding = Padding::Zeros;
  } else if (padding == "border") {
    p.padding = Padding::Border;
  } else if (padding == "reflection") {
    p.padding = Padding::Reflection;
  } else {
    fail("unknown padding_mode '{}' (expected zeros, border or reflection)", padding);
  }
  const std::int64_t align = a.get_int("align_corners", 0);
  REFOLD_CHECK(align == 0 || align == 1, "align_corners must be 0 or 1 (got {})", align);
  p.align_corners = align == 1;
  return std::make_shared<GridSample>(p);
}

}  // namespace

const std::vector<OpDef>& resize_ops() {
  static const std::vector<OpDef> table = {
      // v11: roi/scales/sizes and coordinate modes
      {"Resize", 11, build_resize, LayoutRule::FirstInput, nullptr, ShapeRule::LaterInputsSetShape},
      // v9: scales became an input
      {"Upsample", 7, build_upsample, LayoutRule::FirstInput, nullptr,
       ShapeRule::LaterInputsSetShape},
      // v16: 4-d; v20: any rank, modes renamed
      {"GridSample", 16, build_grid_sample, LayoutRule::Fresh},
  };
  return table;
}

}  // namespace refold::ops
