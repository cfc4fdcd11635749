// oneDNN conv_nd / conv_transpose_nd: ONNX's N-d arguments, validated as the reference validates
// them, turned into a oneDNN problem (see conv_primitive.h).
#include "kernels/onednn/conv_nd.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "core/check.h"
#include "kernels/onednn/conv_primitive.h"
#include "kernels/reference/conv_common.h"

namespace refold::onednn {
namespace {

// The problem both ops share: sizes, groups and the per-axis window. Weight dims {O, I, k…}, or
// {G, O/G, I/G, k…} grouped, with O the primitive's output and I its input channels.
detail::ConvProblem nd_problem(std::string_view op, const Tensor& input, const Shape& out,
                               const Tensor& weight, const reference::ConvNdParams& p) {
  detail::ConvProblem problem;
  problem.op = op;
  problem.src_dims = input.sizes();
  problem.dst_dims = out;
  problem.groups = p.groups;
  const std::int64_t o = out[1], i = input.size(1);
  problem.weight_dims = p.groups == 1 ? Shape{o, i} : Shape{p.groups, o / p.groups, i / p.groups};
  problem.weight_dims.insert(problem.weight_dims.end(), weight.sizes().begin() + 2,
                             weight.sizes().end());
  problem.strides = p.stride;
  problem.dilates.clear();
  for (const std::int64_t d : p.dilation) problem.dilates.push_back(d - 1);  // oneDNN: the gaps
  problem.pad_l = p.pad_begin;
  problem.pad_r = p.pad_end;
  return problem;
}

}  // namespace

Tensor conv_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
               const reference::ConvNdParams& params, std::string* declined) {
  const Shape out = reference::detail::check_conv_nd(input, weight, bias, params);
  return detail::run_conv(nd_problem("conv_nd", input, out, weight, params), input, weight, bias,
                          {}, declined);
}

Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const reference::ConvNdParams& params, std::string* declined) {
  const Shape out = reference::detail::check_conv_transpose_nd(input, weight, bias, params);
  // oneDNN takes the output size as given and requires, per axis,
  //   out = (in − 1)·s − pad_l − pad_r + d·(k − 1) + 1
  // so output_padding is a smaller end pad: pad_r = pad_end − output_padding (negative where it
  // extends the output). A negative begin pad (ONNX output_shape asking for more than the full
  // output) is the reference's.
  if (std::any_of(params.pad_begin.begin(), params.pad_begin.end(), [](auto v) { return v < 0; })) {
    std::string why = fmt::format("a negative begin pad [{}]", fmt::join(params.pad_begin, ", "));
    if (declined == nullptr) fail("conv_transpose_nd: oneDNN declined: {}", why);
    *declined = std::move(why);
    return {};
  }
  detail::ConvProblem problem = nd_problem("conv_transpose_nd", input, out, weight, params);
  problem.transposed = true;
  for (std::size_t a = 0; a < params.output_padding.size(); ++a)
    problem.pad_r[a] -= params.output_padding[a];
  return detail::run_conv(problem, input, weight, bias, {}, declined);
}

}  // namespace refold::onednn
