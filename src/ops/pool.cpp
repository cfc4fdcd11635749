// MaxPool, AveragePool and GlobalAveragePool: nn::MaxPool2d / AvgPool2d / AdaptiveAvgPool2d
// when PyTorch's rules give ONNX's result, else Pool.
#include "ops/pool.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "core/check.h"
#include "onnx/tensor_proto.h"
#include "ops/op.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/pooling.h"

namespace refold::ops {

Pool::Pool(const PoolAttributes& attributes)
    : Op(attributes.max ? "MaxPool" : "AveragePool"), attributes_(attributes) {}

std::vector<Tensor> Pool::run(const std::vector<Tensor>& in) {
  const auto& a = attributes_;
  REFOLD_CHECK(in.size() == 1 && in[0].defined(), "{}: expects 1 input, got {}", type_name(),
               in.size());
  const Tensor& x = in[0];
  REFOLD_CHECK(x.dim() != 3 && x.dim() != 5,
               "unsupported: {}-d {} (X is {}-d; refold runs 2-d pools on 4-d tensors)",
               x.dim() - 2, type_name(), x.dim());
  REFOLD_CHECK(x.dim() == 4, "{}: X must be 4-d, got [{}]", type_name(),
               fmt::join(x.sizes(), ", "));
  reference::Pool2dParams p;
  p.max = a.max;
  p.kernel = a.kernel;
  p.stride = a.stride;
  p.dilation = a.dilation;
  p.pads = a.padding.resolve({x.size(2), x.size(3)}, a.kernel, a.stride, a.dilation);
  p.ceil_mode = a.ceil_mode;
  p.count_include_pad = a.count_include_pad;
  // The ONNX output size first: it rejects a ceil_mode window starting in the end padding,
  // which is exactly the window PyTorch's rule drops, so past this check both rules agree.
  reference::onnx_pool_output_size(x.size(2), p.kernel.h, p.stride.h, p.dilation.h, p.pads.top,
                                   p.pads.bottom, p.ceil_mode);
  reference::onnx_pool_output_size(x.size(3), p.kernel.w, p.stride.w, p.dilation.w, p.pads.left,
                                   p.pads.right, p.ceil_mode);
  // Symmetric pads of at most half the kernel are PyTorch's pools (oneDNN where it applies).
  // Average: PyTorch's divisor with count_include_pad is the window clipped to the padded input,
  // and without it the positions inside the input — ONNX's counts (kernels/reference/onnx_ops.h).
  const bool symmetric = p.pads.top == p.pads.bottom && p.pads.left == p.pads.right &&
                         2 * p.pads.top <= p.kernel.h && 2 * p.pads.left <= p.kernel.w;
  if (symmetric && a.max) {
    MaxPool2dOptions o{p.kernel, p.stride, Size2d(p.pads.top, p.pads.left), p.dilation,
                       p.ceil_mode};
    return {functional::max_pool2d(x, o)};
  }
  if (symmetric && p.dilation == Size2d(1)) {
    AvgPool2dOptions o{
        p.kernel,    p.stride, Size2d(p.pads.top, p.pads.left), p.ceil_mode, p.count_include_pad,
        std::nullopt};
    return {functional::avg_pool2d(x, o)};
  }
  return {reference::pool2d(x, p)};
}

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

bool read_flag(const graph::Attributes& a, const std::string& name) {
  const std::int64_t v = a.get_int(name, 0);
  REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", name, v);
  return v == 1;
}

PoolAttributes read_pool(const graph::Node& node, const std::string& op, bool max) {
  const WindowAttrs window = read_window_attrs(node, op);
  REFOLD_CHECK(window.kernel_shape.has_value(), "kernel_shape is required");
  PoolAttributes p;
  p.max = max;
  p.kernel = *window.kernel_shape;
  p.stride = window.strides;
  p.dilation = window.dilations;
  p.padding = window.padding;
  p.ceil_mode = read_flag(node.attributes, "ceil_mode");
  return p;
}

// PyTorch's pools give ONNX's result when nothing depends on the input size, the pads are
// symmetric and at most half the kernel (PyTorch's limit), and ceil_mode is off (PyTorch then
// drops a last window that starts in the padding; ONNX versions differ there).
bool torch_compatible(const PoolAttributes& p, Pads2d& pads) {
  if (p.padding.mode != AutoPad::NotSet && p.padding.mode != AutoPad::Valid) return false;
  pads = p.padding.mode == AutoPad::Valid ? Pads2d{} : p.padding.pads;
  return !p.ceil_mode && pads.top == pads.bottom && pads.left == pads.right &&
         2 * pads.top <= p.kernel.h && 2 * pads.left <= p.kernel.w;
}

}  // namespace

nn::ModulePtr build_max_pool(const BuildContext& context) {
  const graph::Node& node = context.node;
  // F16: the Indices output and column-major indices are not implemented.
  REFOLD_CHECK(node.outputs.size() < 2 || node.outputs[1].empty(),
               "unsupported: MaxPool output 'Indices' ('{}')", node.outputs[1]);
  const std::int64_t order = node.attributes.get_int("storage_order", 0);
  REFOLD_CHECK(order == 0, "unsupported attribute storage_order={}", order);
  check_arity(node, 1, 1, 1);
  // MaxPool-12 also takes (u)int8; refold holds those as int64 and pools floats only, so a
  // declared integer input is refused here rather than by the kernel at run time (as "int64").
  const int elem_type = declared_elem_type(context, 0);
  REFOLD_CHECK(elem_type == 0 || elem_type == ::onnx::TensorProto::FLOAT ||
                   elem_type == ::onnx::TensorProto::FLOAT16 ||
                   elem_type == ::onnx::TensorProto::BFLOAT16,
               "unsupported: input '{}' has element type {} (refold's MaxPool takes float32, "
               "float16 and bfloat16)",
               node.inputs[0], lower(onnx::detail::data_type_name(elem_type)));
  const PoolAttributes p = read_pool(node, "MaxPool", true);
  Pads2d pads;
  if (!torch_compatible(p, pads)) return std::make_shared<Pool>(p);
  nn::MaxPool2dOptions options(p.kernel);
  options.stride(p.stride).padding(Size2d(pads.top, pads.left)).dilation(p.dilation);
  return std::make_shared<nn::MaxPool2d>(options);
}

nn::ModulePtr build_average_pool(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 1, 1);
  PoolAttributes p = read_pool(node, "AveragePool", false);
  p.count_include_pad = read_flag(node.attributes, "count_include_pad");
  Pads2d pads;
  if (!torch_compatible(p, pads) || p.dilation != Size2d(1)) return std::make_shared<Pool>(p);
  nn::AvgPool2dOptions options(p.kernel);
  options.stride(p.stride)
      .padding(Size2d(pads.top, pads.left))
      .ceil_mode(false)
      .count_include_pad(p.count_include_pad);
  return std::make_shared<nn::AvgPool2d>(options);
}

nn::ModulePtr build_global_average_pool(const BuildContext& context) {
  check_arity(context.node, 1, 1, 1);
  return std::make_shared<nn::AdaptiveAvgPool2d>(Size2d(1));
}

const std::vector<OpDef>& pool_ops() {
  static const std::vector<OpDef> table = {
      {"MaxPool", 1, build_max_pool},
      {"AveragePool", 1, build_average_pool},
      {"GlobalAveragePool", 1, build_global_average_pool},
  };
  return table;
}

}  // namespace refold::ops
