#include "ops/axis_linear.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>

#include "core/check.h"
#include "core/stand_in.h"
#include "kernels/dispatch.h"
#include "kernels/native/channel_mix.h"
#include "kernels/onednn/matmul.h"
#include "kernels/reference/onnx_ops.h"
#include "refold/functional.h"
#include "refold/reference.h"

namespace refold::ops {
namespace {

// The order that moves `axis` last and keeps the others in order, and its inverse.
Shape axis_last(std::int64_t rank, std::int64_t axis) {
  Shape order;
  for (std::int64_t d = 0; d < rank; ++d)
    if (d != axis) order.push_back(d);
  order.push_back(axis);
  return order;
}

Shape inverse(const Shape& order) {
  Shape back(order.size());
  for (std::size_t d = 0; d < order.size(); ++d) back[static_cast<std::size_t>(order[d])] = d;
  return back;
}

// y[o, n, i] += b[n] over y [outer, N, inner], both contiguous.
void add_row_bias(Tensor& y, const Tensor& b, std::int64_t outer, std::int64_t n,
                  std::int64_t inner) {
  float* out = y.data<float>();
  const float* add = b.data<float>();
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t j = 0; j < n; ++j) {
      float* row = out + (o * n + j) * inner;
      const float v = add[j];
      for (std::int64_t i = 0; i < inner; ++i) row[i] += v;
    }
}

// The native path (see the header), or undefined with the reason in *declined; b is [N] and
// contiguous, or undefined.
Tensor axis_linear(const Tensor& x, const Tensor& w, const Tensor& b, std::int64_t axis,
                   std::string* declined) {
  const bool float32 = x.dtype() == DType::Float32 && w.dtype() == DType::Float32 &&
                       (!b.defined() || b.dtype() == DType::Float32);
  if (!float32 || x.numel() == 0) {
    *declined = "not float32, or empty";
    return {};
  }
  const std::int64_t k = w.size(0), n = w.size(1);
  Shape y_sizes = x.sizes();
  y_sizes[static_cast<std::size_t>(axis)] = n;
  if (StandInRun::active()) return zeros(y_sizes, x.dtype());  // shape inference asks no more
  const Shape last = axis_last(x.dim(), axis);
  const Tensor weight = w.permute({1, 0});  // [N, K], linear's layout, a view
  // The axis innermost in memory: x moved to [..., K] is a row-major matrix of rows.
  if (const Tensor rows = x.permute(last); rows.is_contiguous()) {
    const Tensor y = functional::linear(rows, weight, b);  // [..., N], row-major
    return y.permute(inverse(last));
  }
  const Tensor xc = x.contiguous();
  std::int64_t outer = 1, inner = 1;
  for (std::int64_t d = 0; d < axis; ++d) outer *= x.size(d);
  for (std::int64_t d = axis + 1; d < x.dim(); ++d) inner *= x.size(d);
  const Tensor x3 = xc.view({outer, k, inner});
  // A short axis: every output row from the K rows of a block in cache (native/channel_mix.h).
  if (Tensor y = native::channel_mix(x3, w.contiguous(), b, declined); y.defined())
    return y.view(y_sizes);
  const Tensor wt = w.as_strided({1, n, k}, {n * k, 1, n}, w.storage_offset());  // Wᵀ, a view
  Tensor y = onednn::matmul(wt, x3, 1.0f, declined);  // [outer, N, inner]
  if (!y.defined()) return {};
  if (b.defined()) add_row_bias(y, b, outer, n, inner);
  return y.view(y_sizes);
}

}  // namespace

std::vector<Tensor> AxisLinear::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(
      (inputs.size() == 2 || inputs.size() == 3) && inputs[0].defined() && inputs[1].defined(),
      "AxisLinear: expects x, W and an optional bias, got {} inputs", inputs.size());
  const Tensor& x = inputs[0];
  const Tensor& w = inputs[1];
  const Tensor b = inputs.size() == 3 ? inputs[2] : Tensor();
  REFOLD_CHECK(axis_ < x.dim() && w.dim() == 2 && x.size(axis_) == w.size(0),
               "AxisLinear: x [{}] along axis {} does not match W [{}]", fmt::join(x.sizes(), ", "),
               axis_, fmt::join(w.sizes(), ", "));
  REFOLD_CHECK(!b.defined() || b.numel() == w.size(1),
               "AxisLinear: bias [{}] does not hold W's {} outputs", fmt::join(b.sizes(), ", "),
               w.size(1));
  const Tensor bias = b.defined() ? b.reshape({w.size(1)}).contiguous() : b;
  return {dispatch(
      type_name(),
      {{"native", [&](std::string* declined) { return axis_linear(x, w, bias, axis_, declined); }}},
      [&] {
        // The exporter's form: x with the axis moved last, times W, plus b, moved back.
        const Shape last = axis_last(x.dim(), axis_);
        const Tensor y = reference::linear(x.permute(last), w.permute({1, 0}), bias);
        return y.permute(inverse(last)).contiguous();
      })};
}

}  // namespace refold::ops
