#include "refold/graph/ops/pool.h"

#include <fmt/ranges.h>

#include "core/check.h"

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
  return {reference::pool2d(x, p)};
}

}  // namespace refold::graph::ops
