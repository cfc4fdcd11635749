#include "refold/graph/ops/pool.h"

#include <fmt/ranges.h>

#include "core/check.h"
#include "refold/functional.h"

namespace refold::graph::ops {

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
  // and without it the positions inside the input — ONNX's counts (reference_extra.h).
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

}  // namespace refold::graph::ops
