// Reference linear (torch.nn.functional.linear): y = x · Wᵀ + b over the last dimension, any
// leading dimensions, any strides; accumulation in double, one rounding to the output dtype.
#include <cstdint>
#include <vector>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/conv_common.h"
#include "refold/reference.h"

namespace refold::reference {

namespace detail {

Shape check_linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  constexpr std::string_view op = "linear";
  REFOLD_CHECK(input.defined(), "{}: input is undefined", op);
  REFOLD_CHECK(input.dim() >= 1,
               "{}: input must have at least 1 dimension [..., in_features], "
               "got {}",
               op, input.description());
  REFOLD_CHECK(is_floating(input.dtype()),
               "{}: input dtype {} is not supported (float32 or bfloat16)", op,
               dtype_name(input.dtype()));
  check_operand(op, "weight", weight, 2, "[out_features, in_features]");
  check_same_dtype(op, "weight", weight, input);
  const std::int64_t in_features = input.size(-1);
  const std::int64_t out_features = weight.size(0);
  REFOLD_CHECK(weight.size(1) == in_features,
               "{}: input has {} features (last dim of {}), weight expects {} (weight {})", op,
               in_features, input.description(), weight.size(1), weight.description());
  check_bias(op, bias, out_features, input, "out_features");
  // Output [..., out_features]: the input's leading dims (PyTorch's addmm result).
  Shape out_sizes(input.sizes().begin(), input.sizes().end() - 1);
  out_sizes.push_back(out_features);
  return out_sizes;
}

}  // namespace detail

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  const Shape out_sizes = detail::check_linear(input, weight, bias);
  const std::int64_t in_features = input.size(-1);
  const std::int64_t out_features = weight.size(0);
  const Shape lead(input.sizes().begin(), input.sizes().end() - 1);
  Tensor output = empty(out_sizes, input.dtype());

  const FloatReader in(input), w(weight);
  const Shape in_lead_strides(in.strides().begin(), in.strides().end() - 1);
  const Shape out_lead_strides(output.strides().begin(), output.strides().end() - 1);
  const std::int64_t in_sk = in.stride(in.strides().size() - 1);
  const std::int64_t w_so = w.stride(0), w_sk = w.stride(1);
  const std::int64_t out_so = output.stride(-1);
  void* out_base = output.data_ptr();
  const DType out_dtype = output.dtype();
  const std::vector<float> b = detail::bias_values(bias, out_features);

  for_each_index(lead, [&](const Shape& index) {
    const std::int64_t in_row = offset_of(index, in_lead_strides);
    const std::int64_t out_row = offset_of(index, out_lead_strides);
    for (std::int64_t o = 0; o < out_features; ++o) {
      // out[..., o] = bias[o] + sum_k in[..., k] · w[o, k]
      double acc = b[static_cast<std::size_t>(o)];
      for (std::int64_t k = 0; k < in_features; ++k) {
        acc += static_cast<double>(in.at_offset(in_row + in_sk * k)) *
               static_cast<double>(w.at_offset(w_so * o + w_sk * k));
      }
      store_from_float(out_base, out_dtype, out_row + out_so * o, round_to_dtype(acc, out_dtype));
    }
  });
  return output;
}

}  // namespace refold::reference
