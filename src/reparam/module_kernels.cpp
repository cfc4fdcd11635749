// Reading modules as kernel-algebra values and building modules from them; see
// refold/reparam/module_kernels.h.
#include "refold/reparam/module_kernels.h"

#include <string_view>

#include "core/check.h"
#include "core/checked_math.h"

namespace refold::reparam {
namespace {

void check_weight_format(std::string_view op, MemoryFormat format) {
  REFOLD_CHECK(format == MemoryFormat::Contiguous || format == MemoryFormat::ChannelsLast,
               "{}: weight_format must be contiguous or channels_last, got {}", op,
               memory_format_name(format));
}

// The kernel's weight must be a 4-d float tensor and groups positive before a module can be
// built from its sizes; the module's own constructor then checks channels against groups.
void check_kernel_tensor(std::string_view op, const Tensor& weight, std::int64_t groups,
                         std::string_view layout) {
  REFOLD_CHECK(weight.defined() && weight.dim() == 4, "{}: weight must be a 4-d {} tensor, got {}",
               op, layout, weight.defined() ? weight.description() : "undefined");
  REFOLD_CHECK(is_floating(weight.dtype()),
               "{}: weight has dtype {}; only float32 and bfloat16 are supported", op,
               dtype_name(weight.dtype()));
  REFOLD_CHECK(groups > 0, "{}: groups ({}) must be positive", op, groups);
  checked_mul(weight.size(1), groups, op);  // the channel count weight.size(1)·groups
}

// After the module is built: its registered shapes must be the kernel's, and a bias must be
// [out] in the weight's dtype.
void check_matches(std::string_view op, const Tensor& weight, const Tensor& bias,
                   const Tensor& module_weight, std::int64_t out_channels) {
  REFOLD_CHECK(weight.sizes() == module_weight.sizes(),
               "{}: weight {} does not match the module's {}", op, weight.description(),
               module_weight.description());
  if (bias.defined())
    REFOLD_CHECK(bias.dim() == 1 && bias.size(0) == out_channels && bias.dtype() == weight.dtype(),
                 "{}: bias {} must be [{}] of the weight's dtype {}", op, bias.description(),
                 out_channels, dtype_name(weight.dtype()));
}

// Points a freshly built module's parameter at its own copy of `value` in `format`. set_data
// keeps the registered handle, so state_dict() and load_state_dict() see the new tensor.
void install(Tensor parameter, const Tensor& value, MemoryFormat format) {
  const MemoryFormat f = value.dim() == 4 ? format : MemoryFormat::Contiguous;
  Tensor copy = empty(value.sizes(), {value.dtype(), f});
  copy.copy_(value);
  parameter.set_data(copy);
}

}  // namespace

ConvKernel kernel_of(const nn::Conv2d& conv) {
  return {conv.weight(), conv.bias(), conv.options().groups()};
}

ConvTransposeKernel kernel_of(const nn::ConvTranspose2d& conv) {
  return {conv.weight(), conv.bias(), conv.options().groups()};
}

BatchNormParams params_of(const nn::BatchNorm2d& bn) {
  return {bn.weight(), bn.bias(), bn.running_mean(), bn.running_var(), bn.options().eps()};
}

std::shared_ptr<nn::Conv2d> make_conv2d(const ConvKernel& kernel, const nn::Conv2dOptions& geometry,
                                        MemoryFormat weight_format) {
  constexpr std::string_view op = "make_conv2d";
  check_weight_format(op, weight_format);
  check_kernel_tensor(op, kernel.weight, kernel.groups, "[out, in/groups, kh, kw]");
  auto options =
      nn::Conv2dOptions(kernel.in_channels(), kernel.out_channels(), kernel.kernel_size())
          .stride(geometry.stride())
          .padding(geometry.padding())
          .dilation(geometry.dilation())
          .groups(kernel.groups)
          .bias(kernel.bias.defined());
  auto conv = std::make_shared<nn::Conv2d>(options);
  check_matches(op, kernel.weight, kernel.bias, conv->weight(), kernel.out_channels());
  install(conv->weight(), kernel.weight, weight_format);
  if (kernel.bias.defined()) install(conv->bias(), kernel.bias, weight_format);
  return conv;
}

std::shared_ptr<nn::ConvTranspose2d> make_conv_transpose2d(
    const ConvTransposeKernel& kernel, const nn::ConvTranspose2dOptions& geometry,
    MemoryFormat weight_format) {
  constexpr std::string_view op = "make_conv_transpose2d";
  check_weight_format(op, weight_format);
  check_kernel_tensor(op, kernel.weight, kernel.groups, "[in, out/groups, kh, kw]");
  auto options = nn::ConvTranspose2dOptions(kernel.in_channels(), kernel.out_channels(),
                                            {kernel.weight.size(2), kernel.weight.size(3)})
                     .stride(geometry.stride())
                     .padding(geometry.padding())
                     .output_padding(geometry.output_padding())
                     .dilation(geometry.dilation())
                     .groups(kernel.groups)
                     .bias(kernel.bias.defined());
  // The module checks channels and groups; then the shapes must match what it registered.
  auto conv = std::make_shared<nn::ConvTranspose2d>(options);
  check_matches(op, kernel.weight, kernel.bias, conv->weight(), kernel.out_channels());
  install(conv->weight(), kernel.weight, weight_format);
  if (kernel.bias.defined()) install(conv->bias(), kernel.bias, weight_format);
  return conv;
}

}  // namespace refold::reparam
