// Col2Im (opset 18; torch.nn.functional.fold, which the dynamo exporter writes as it): the image
// whose sliding blocks X holds, overlapping ones summed (kernels/reference/col2im.h has the math).
// image_shape and block_shape are int64 inputs, read per call (constants in exported graphs);
// strides, dilations and pads are attributes. Runs native::col2im, the reference as fallback.
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/col2im.h"
#include "kernels/reference/onnx_ops.h"
#include "ops/op.h"
#include "ops/tensor_values.h"
#include "refold/graph/op.h"

namespace refold::ops {
namespace {

struct Col2ImAttributes {
  std::vector<std::int64_t> strides, dilations, pads;  // empty: the defaults (1, 1, 0)
};

class Col2Im : public graph::Op {
 public:
  explicit Col2Im(Col2ImAttributes attributes) : Op("Col2Im"), a_(std::move(attributes)) {}

  std::vector<Tensor> run(const std::vector<Tensor>& inputs) override {
    REFOLD_CHECK(inputs.size() == 3, "Col2Im: expects 3 inputs, got {}", inputs.size());
    reference::Col2ImParams p;
    p.image = int64_vector(inputs[1], "Col2Im", "image_shape");
    p.block = int64_vector(inputs[2], "Col2Im", "block_shape");
    const std::size_t r = p.image.size();
    p.stride = a_.strides.empty() ? std::vector<std::int64_t>(r, 1) : a_.strides;
    p.dilation = a_.dilations.empty() ? std::vector<std::int64_t>(r, 1) : a_.dilations;
    const std::vector<std::int64_t> pads =
        a_.pads.empty() ? std::vector<std::int64_t>(2 * r, 0) : a_.pads;
    REFOLD_CHECK(pads.size() == 2 * r,
                 "Col2Im: pads [{}] must have {} values (begins, then ends) for image_shape [{}]",
                 fmt::join(pads, ", "), 2 * r, fmt::join(p.image, ", "));
    p.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(r));
    p.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(r), pads.end());
    const Tensor& x = inputs[0];
    const reference::Col2ImExtent extent = reference::check_col2im(x, p);
    return {dispatch(
        "col2im",
        {{"native", [&](std::string* declined) { return native::col2im(x, p, extent, declined); }}},
        [&] { return reference::col2im(x, p); })};
  }

 private:
  Col2ImAttributes a_;
};

nn::ModulePtr build_col2im(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 3, 3, 1);
  const graph::Attributes& attrs = node.attributes;
  Col2ImAttributes a{attrs.get_ints("strides", {}), attrs.get_ints("dilations", {}),
                     attrs.get_ints("pads", {})};
  REFOLD_CHECK(std::all_of(a.strides.begin(), a.strides.end(), [](auto v) { return v > 0; }),
               "strides must be positive (got [{}])", fmt::join(a.strides, ", "));
  REFOLD_CHECK(std::all_of(a.dilations.begin(), a.dilations.end(), [](auto v) { return v > 0; }),
               "dilations must be positive (got [{}])", fmt::join(a.dilations, ", "));
  REFOLD_CHECK(std::all_of(a.pads.begin(), a.pads.end(), [](auto v) { return v >= 0; }),
               "pads must be non-negative (got [{}])", fmt::join(a.pads, ", "));
  const auto image = constant_ints(context, 1, "image_shape");
  const auto block = constant_ints(context, 2, "block_shape");
  if (image && block) {
    const std::size_t r = image->size();
    REFOLD_CHECK(r >= 1 && block->size() == r,
                 "image_shape [{}] and block_shape [{}] must have the same length, at least 1",
                 fmt::join(*image, ", "), fmt::join(*block, ", "));
    for (const auto* list : {&a.strides, &a.dilations})
      REFOLD_CHECK(list->empty() || list->size() == r,
                   "strides [{}] and dilations [{}] must have {} values, one per axis of "
                   "image_shape [{}]",
                   fmt::join(a.strides, ", "), fmt::join(a.dilations, ", "), r,
                   fmt::join(*image, ", "));
    REFOLD_CHECK(a.pads.empty() || a.pads.size() == 2 * r,
                 "pads [{}] must have {} values (begins, then ends) for image_shape [{}]",
                 fmt::join(a.pads, ", "), 2 * r, fmt::join(*image, ", "));
  }
  return std::make_shared<Col2Im>(std::move(a));
}

}  // namespace

const std::vector<OpDef>& col2im_ops() {
  static const std::vector<OpDef> table = {
      {"Col2Im", 18, build_col2im, LayoutRule::Fresh},
  };
  return table;
}

}  // namespace refold::ops
