#include "ops/pad.h"

#include <fmt/ranges.h>

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/pad.h"
#include "ops/op.h"

namespace refold::ops {

namespace {

std::vector<std::int64_t> int64_values(const Tensor& t, const char* name) {
  REFOLD_CHECK(t.dtype() == DType::Int64, "Pad: {} must be int64, got {}", name,
               dtype_name(t.dtype()));
  REFOLD_CHECK(t.dim() == 1, "Pad: {} must be 1-d, got [{}]", name, fmt::join(t.sizes(), ", "));
  std::vector<std::int64_t> values(static_cast<std::size_t>(t.numel()));
  const std::int64_t* p = t.data<std::int64_t>();
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = p[static_cast<std::int64_t>(i) * t.stride(0)];
  return values;
}

}  // namespace

std::vector<Tensor> Pad::run(const std::vector<Tensor>& in) {
  const bool attribute_form = pads_.has_value();
  REFOLD_CHECK(
      attribute_form ? in.size() == 1 && in[0].defined()
                     : in.size() >= 2 && in.size() <= 4 && in[0].defined() && in[1].defined(),
      "Pad: expects data, pads and optional constant_value, axes; got {} inputs", in.size());
  const Tensor& x = in[0];
  const auto rank = x.dim();
  const std::vector<std::int64_t> pads = attribute_form ? *pads_ : int64_values(in[1], "pads");
  // axes: which dims `pads` covers (negative counts from the end); all dims by default.
  std::vector<std::int64_t> axes;
  if (in.size() > 3 && in[3].defined()) {
    axes = int64_values(in[3], "axes");
    for (auto& axis : axes) {
      REFOLD_CHECK(axis >= -rank && axis < rank, "Pad: axis {} is out of range for rank {}", axis,
                   rank);
      if (axis < 0) axis += rank;
    }
  } else {
    for (std::int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  const auto n = static_cast<std::int64_t>(axes.size());
  REFOLD_CHECK(static_cast<std::int64_t>(pads.size()) == 2 * n,
               "Pad: pads has {} values; expected {} (2 × {} axes)", pads.size(), 2 * n, n);
  double value = value_;
  if (in.size() > 2 && in[2].defined()) {
    REFOLD_CHECK(in[2].numel() == 1, "Pad: constant_value must be a scalar, got [{}]",
                 fmt::join(in[2].sizes(), ", "));
    value = in[2].dtype() == DType::Int64 ? static_cast<double>(in[2].data<std::int64_t>()[0])
                                          : static_cast<double>(in[2].item());
  }
  std::vector<std::int64_t> begin(static_cast<std::size_t>(rank), 0), end = begin;
  for (std::int64_t i = 0; i < n; ++i) {
    const auto axis = static_cast<std::size_t>(axes[static_cast<std::size_t>(i)]);
    begin[axis] = pads[static_cast<std::size_t>(i)];
    end[axis] = pads[static_cast<std::size_t>(i + n)];
  }
  return {dispatch("pad",
                   {{"native",
                     [&](std::string* declined) {
                       return native::onnx_pad(x, begin, end, mode_, static_cast<float>(value),
                                               declined);
                     }}},
                   [&] { return reference::onnx_pad(x, begin, end, mode_, value); })};
}

namespace {

reference::PadMode parse_pad_mode(const std::string& mode) {
  if (mode == "constant") return reference::PadMode::Constant;
  if (mode == "reflect") return reference::PadMode::Reflect;
  if (mode == "edge") return reference::PadMode::Edge;
  if (mode == "wrap") return reference::PadMode::Wrap;
  fail("unknown Pad mode '{}' (expected constant, reflect, edge or wrap)", mode);
}

}  // namespace

// Pad-2 to Pad-10: pads (required) and value are attributes; Pad-11 on: inputs.
nn::ModulePtr build_pad(const BuildContext& context) {
  const graph::Node& node = context.node;
  const reference::PadMode mode = parse_pad_mode(node.attributes.get_string("mode", "constant"));
  if (context.opset < 11) {
    check_arity(node, 1, 1, 1);
    REFOLD_CHECK(node.attributes.has("pads"), "the pads attribute is required");
    std::vector<std::int64_t> pads = node.attributes.get_ints("pads");
    REFOLD_CHECK(pads.size() % 2 == 0, "pads must have an even length, got {} ([{}])", pads.size(),
                 fmt::join(pads, ", "));
    return std::make_shared<Pad>(mode, std::move(pads), node.attributes.get_float("value", 0.0f));
  }
  check_arity(node, 2, 4, 1);
  if (is_constant_input(context.graph, node, 1)) {
    const Tensor& pads = context.graph.constant(node.inputs[1]);
    REFOLD_CHECK(pads.dtype() == DType::Int64 && pads.dim() == 1 && pads.numel() % 2 == 0,
                 "pads must be a 1-d int64 tensor of even length, got {}", pads.description());
  }
  return std::make_shared<Pad>(mode);
}

const std::vector<OpDef>& pad_ops() {
  static const std::vector<OpDef> table = {
      {"Pad", 2, build_pad},  // v11: pads and constant_value became inputs; v19 adds wrap
  };
  return table;
}

}  // namespace refold::ops
