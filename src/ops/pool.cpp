// MaxPool and AveragePool: nn::MaxPool2d / AvgPool2d
// when PyTorch's rules give ONNX's result, else Pool (any spatial rank, MaxPool's Indices).
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
namespace {

// A 4-d pool: PyTorch's where its rules give ONNX's result, else the reference.
Tensor pool2d(const Tensor& x, const reference::PoolParams& p) {
  // Symmetric pads of at most half the kernel are PyTorch's pools (oneDNN where it applies).
  // Average: PyTorch's divisor with count_include_pad is the window clipped to the padded input,
  // and without it the positions inside the input — ONNX's counts (kernels/reference/onnx_ops.h).
  const bool symmetric = p.pad_begin == p.pad_end && 2 * p.pad_begin[0] <= p.kernel[0] &&
                         2 * p.pad_begin[1] <= p.kernel[1];
  const Size2d kernel(p.kernel[0], p.kernel[1]);
  const Size2d stride(p.stride[0], p.stride[1]);
  const Size2d dilation(p.dilation[0], p.dilation[1]);
  if (symmetric && p.max) {
    MaxPool2dOptions o{kernel, stride, Size2d(p.pad_begin[0], p.pad_begin[1]), dilation,
                       p.ceil_mode};
    return functional::max_pool2d(x, o);
  }
  if (symmetric && dilation == Size2d(1)) {
    AvgPool2dOptions o{kernel,
                       stride,
                       Size2d(p.pad_begin[0], p.pad_begin[1]),
                       p.ceil_mode,
                       p.count_include_pad,
                       std::nullopt};
    return functional::avg_pool2d(x, o);
  }
  return reference::pool(x, p);
}

}  // namespace

Pool::Pool(const PoolAttributes& attributes)
    : Op(attributes.max ? "MaxPool" : "AveragePool"), attributes_(attributes) {}

std::vector<Tensor> Pool::run(const std::vector<Tensor>& in) {
  const auto& a = attributes_;
  REFOLD_CHECK(in.size() == 1 && in[0].defined(), "{}: expects 1 input, got {}", type_name(),
               in.size());
  const Tensor& x = in[0];
  const std::size_t r = a.kernel.size();
  REFOLD_CHECK(x.dim() == static_cast<std::int64_t>(r) + 2,
               "{}: X must be {}-d [N, C, {} spatial] for kernel_shape [{}], got [{}]", type_name(),
               r + 2, r, fmt::join(a.kernel, ", "), fmt::join(x.sizes(), ", "));
  reference::PoolParams p;
  p.max = a.max;
  p.kernel = a.kernel;
  p.stride = a.window.strides;
  p.dilation = a.window.dilations;
  a.window.resolve(Shape(x.sizes().begin() + 2, x.sizes().end()), a.kernel, p.pad_begin, p.pad_end);
  p.ceil_mode = a.ceil_mode;
  p.count_include_pad = a.count_include_pad;
  // The ONNX output size first: it rejects a ceil_mode window starting in the end padding,
  // which is exactly the window PyTorch's rule drops, so past this check both rules agree.
  for (std::size_t k = 0; k < r; ++k)
    reference::onnx_pool_output_size(x.size(static_cast<std::int64_t>(k) + 2), p.kernel[k],
                                     p.stride[k], p.dilation[k], p.pad_begin[k], p.pad_end[k],
                                     p.ceil_mode);
  if (a.indices) {
    Tensor indices;
    Tensor y = reference::pool(x, p, &indices, a.column_major);
    return {y, indices};
  }
  if (r == 1) {
    // A 1-d pool is the 2-d one over [N, C, 1, L] with the window 1 × k (inserting a size-1
    // axis is a view of any strides): PyTorch's pools and oneDNN's fast path take it.
    const reference::PoolParams p2{p.max,
                                   {1, p.kernel[0]},
                                   {1, p.stride[0]},
                                   {1, p.dilation[0]},
                                   {0, p.pad_begin[0]},
                                   {0, p.pad_end[0]},
                                   p.ceil_mode,
                                   p.count_include_pad};
    const Tensor y = pool2d(x.view({x.size(0), x.size(1), 1, x.size(2)}), p2);
    return {y.reshape({y.size(0), y.size(1), y.size(3)})};
  }
  return {r == 2 ? pool2d(x, p) : reference::pool(x, p)};
}

namespace {

bool read_flag(const graph::Attributes& a, const std::string& name) {
  const std::int64_t v = a.get_int(name, 0);
  REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", name, v);
  return v == 1;
}

PoolAttributes read_pool(const graph::Node& node, bool max) {
  REFOLD_CHECK(node.attributes.has("kernel_shape"), "kernel_shape is required");
  PoolAttributes p;
  p.max = max;
  p.window = read_window_nd(node, node.attributes.get_ints("kernel_shape").size());
  p.kernel = *p.window.kernel_shape;
  REFOLD_CHECK(!p.kernel.empty(), "kernel_shape must not be empty");
  p.ceil_mode = read_flag(node.attributes, "ceil_mode");
  return p;
}

// PyTorch's 2-d pools give ONNX's result when nothing depends on the input size, the pads are
// symmetric and at most half the kernel (PyTorch's limit), and ceil_mode is off (PyTorch then
// drops a last window that starts in the padding; ONNX versions differ there).
bool torch_compatible(const PoolAttributes& p, Pads2d& pads) {
  const WindowNd& w = p.window;
  if (p.kernel.size() != 2 || p.indices) return false;
  if (w.mode != AutoPad::NotSet && w.mode != AutoPad::Valid) return false;
  if (w.mode == AutoPad::NotSet) pads = {w.pads[0], w.pads[1], w.pads[2], w.pads[3]};
  return !p.ceil_mode && pads.top == pads.bottom && pads.left == pads.right &&
         2 * pads.top <= p.kernel[0] && 2 * pads.left <= p.kernel[1];
}

Size2d size2d(const std::vector<std::int64_t>& v) { return Size2d(v[0], v[1]); }

}  // namespace

nn::ModulePtr build_max_pool(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 1, 2);
  const std::int64_t order = node.attributes.get_int("storage_order", 0);
  REFOLD_CHECK(order == 0 || order == 1, "storage_order must be 0 or 1 (got {})", order);
  // MaxPool-12 also takes (u)int8; refold holds those as int64 and pools floats only, so a
  // declared integer input is refused here rather than by the kernel at run time (as "int64").
  const int elem_type = declared_elem_type(context, 0);
  REFOLD_CHECK(elem_type == 0 || elem_type == ::onnx::TensorProto::FLOAT ||
                   elem_type == ::onnx::TensorProto::FLOAT16 ||
                   elem_type == ::onnx::TensorProto::BFLOAT16,
               "unsupported: input '{}' has element type {} (refold's MaxPool takes float32, "
               "float16 and bfloat16)",
               node.inputs[0], onnx::detail::type_name(elem_type));
  PoolAttributes p = read_pool(node, true);
  // Indices (F16): the flat position of each maximum; storage_order only changes them.
  p.indices = node.outputs.size() > 1 && !node.outputs[1].empty();
  p.column_major = order == 1;
  Pads2d pads;
  if (!torch_compatible(p, pads)) return std::make_shared<Pool>(p);
  nn::MaxPool2dOptions options(size2d(p.kernel));
  options.stride(size2d(p.window.strides))
      .padding(Size2d(pads.top, pads.left))
      .dilation(size2d(p.window.dilations));
  return std::make_shared<nn::MaxPool2d>(options);
}

nn::ModulePtr build_average_pool(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, 1, 1);
  PoolAttributes p = read_pool(node, false);
  p.count_include_pad = read_flag(node.attributes, "count_include_pad");
  Pads2d pads;
  if (!torch_compatible(p, pads) || size2d(p.window.dilations) != Size2d(1))
    return std::make_shared<Pool>(p);
  nn::AvgPool2dOptions options(size2d(p.kernel));
  options.stride(size2d(p.window.strides))
      .padding(Size2d(pads.top, pads.left))
      .ceil_mode(false)
      .count_include_pad(p.count_include_pad);
  return std::make_shared<nn::AvgPool2d>(options);
}

const std::vector<OpDef>& pool_ops() {
  static const std::vector<OpDef> table = {
      {"MaxPool", 1, build_max_pool},
      {"AveragePool", 1, build_average_pool},
  };
  return table;
}

}  // namespace refold::ops
