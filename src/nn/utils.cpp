#include "refold/nn/utils.h"

#include "core/check.h"
#include "nn/layout.h"
#include "refold/nn/conv.h"

namespace refold::nn::utils {

Module& convert_conv2d_weight_memory_format(Module& module, MemoryFormat format) {
  REFOLD_CHECK(format != MemoryFormat::Preserve,
               "convert_conv2d_weight_memory_format: 'preserve' is not a target format (use "
               "contiguous or channels_last)");
  // dynamic_cast so that subclasses of the two conv modules are converted too, like PyTorch's
  // isinstance check. set_data swaps what the registered handle points to: the parameter
  // object, its name and every copy of it stay the same.
  return module.apply([format](Module& m) {
    Tensor weight;
    if (const auto* conv = dynamic_cast<const Conv2d*>(&m))
      weight = conv->weight();
    else if (const auto* deconv = dynamic_cast<const ConvTranspose2d*>(&m))
      weight = deconv->weight();
    if (!weight.defined()) return;
    // nn/layout.h: also restrides an ambiguous 1×1 kernel, as PyTorch does.
    const Tensor converted = detail::to_memory_format(weight, format);
    if (!converted.is_same(weight)) weight.set_data(converted);
  });
}

}  // namespace refold::nn::utils
