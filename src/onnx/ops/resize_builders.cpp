// Builder for Resize (opset 11+): modes nearest and linear; everything else is an explicit
// "unsupported" error listing what is (docs/reliability.md F27).
#include <cmath>

#include "core/check.h"
#include "onnx/ops/tensor_builders.h"
#include "onnx/ops/window_attrs.h"
#include "refold/graph/ops/resize.h"

namespace refold::onnx::ops {
namespace {

using Options = graph::ops::ResizeOptions;

Options::Mode parse_mode(const std::string& s) {
  if (s == "nearest") return Options::Mode::Nearest;
  if (s == "linear") return Options::Mode::Linear;
  REFOLD_CHECK(s != "cubic", "unsupported: mode 'cubic' (refold implements nearest and linear)");
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
  REFOLD_CHECK(s != "tf_crop_and_resize" && s != "half_pixel_symmetric",
               "unsupported: coordinate_transformation_mode '{}' (refold implements half_pixel, "
               "pytorch_half_pixel, asymmetric, tf_half_pixel_for_nn and align_corners)",
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
  options.mode = parse_mode(a.get_string("mode", "nearest"));
  options.nearest_mode = parse_nearest_mode(a.get_string("nearest_mode", "round_prefer_floor"));
  options.coordinates =
      parse_coordinates(a.get_string("coordinate_transformation_mode", "half_pixel"));
  const std::int64_t exclude_outside = a.get_int("exclude_outside", 0);
  REFOLD_CHECK(exclude_outside == 0, "unsupported: exclude_outside={} (refold implements 0)",
               exclude_outside);
  const std::int64_t antialias = a.get_int("antialias", 0);
  REFOLD_CHECK(antialias == 0, "unsupported: antialias={} (refold implements 0)", antialias);
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
  return std::make_shared<graph::ops::Resize>(std::move(options));
}

}  // namespace refold::onnx::ops
