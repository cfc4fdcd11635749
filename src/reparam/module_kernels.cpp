// Reading modules as kernel-algebra values and building modules from them; see
// refold/reparam/module_kernels.h.
#include "refold/reparam/module_kernels.h"

#include <string_view>

#include "core/check.h"

namespace refold::reparam {
namespace {

void check_weight_format(std::string_view op, MemoryFormat format) {
  REFOLD_CHECK(format == MemoryFormat::Contiguous || format == MemoryFormat::ChannelsLast,
               "{}: weight_format must be contiguous or channels_last, got {}", op,
               memory_format_name(format));
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
  // sum_branches validates a kernel completely (shape, groups, dtype, bias) and, for one
  // branch, returns an equal copy in double-then-rounded form: exact for any float value.
  const ConvKernel k = sum_branches({kernel});
  auto options = nn::Conv2dOptions(k.in_channels(), k.out_channels(), k.kernel_size())
                     .stride(geometry.stride())
                     .padding(geometry.padding())
                     .dilation(geometry.dilation())
                     .groups(k.groups)
                     .bias(k.bias.defined());
  auto conv = std::make_shared<nn::Conv2d>(options);
  install(conv->weight(), k.weight, weight_format);
  if (k.bias.defined()) install(conv->bias(), k.bias, weight_format);
  return conv;
}

std::shared_ptr<nn::ConvTranspose2d> make_conv_transpose2d(
    const ConvTransposeKernel& kernel, const nn::ConvTranspose2dOptions& geometry,
    MemoryFormat weight_format) {
  constexpr std::string_view op = "make_conv_transpose2d";
  check_weight_format(op, weight_format);
  REFOLD_CHECK(kernel.weight.defined() && kernel.weight.dim() == 4,
               "{}: weight must be a 4-d [in, out/groups, kh, kw] tensor, got {}", op,
               kernel.weight.defined() ? kernel.weight.description() : "undefined");
  REFOLD_CHECK(is_floating(kernel.weight.dtype()),
               "{}: weight has dtype {}; only float32 and bfloat16 are supported", op,
               dtype_name(kernel.weight.dtype()));
  REFOLD_CHECK(kernel.groups > 0, "{}: groups ({}) must be positive", op, kernel.groups);
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
  REFOLD_CHECK(kernel.weight.sizes() == conv->weight().sizes(),
               "{}: weight {} does not match the module's {}", op, kernel.weight.description(),
               conv->weight().description());
  install(conv->weight(), kernel.weight, weight_format);
  if (kernel.bias.defined()) {
    REFOLD_CHECK(
        kernel.bias.sizes() == conv->bias().sizes() && kernel.bias.dtype() == kernel.weight.dtype(),
        "{}: bias {} must be [{}] of the weight's dtype {}", op, kernel.bias.description(),
        kernel.out_channels(), dtype_name(kernel.weight.dtype()));
    install(conv->bias(), kernel.bias, weight_format);
  }
  return conv;
}

}  // namespace refold::reparam
