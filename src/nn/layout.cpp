#include "nn/layout.h"

#include "core/check.h"

namespace refold::nn::detail {

Tensor to_memory_format(const Tensor& t, MemoryFormat format) {
  REFOLD_CHECK(format != MemoryFormat::Preserve, "to_memory_format: 'preserve' is not a layout");
  REFOLD_CHECK(t.dim() == 4, "to_memory_format: needs a 4-d tensor, got {}", t.description());
  if (!t.is_contiguous(format)) return t.contiguous(format);  // a real permute, counted
  if (t.suggest_memory_format() == format || t.numel() == 0) return t;
  const Shape strides = format == MemoryFormat::ChannelsLast ? channels_last_strides(t.sizes())
                                                             : contiguous_strides(t.sizes());
  return t.as_strided(t.sizes(), strides, t.storage_offset());
}

}  // namespace refold::nn::detail
