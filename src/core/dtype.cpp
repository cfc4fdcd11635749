#include "refold/dtype.h"

#include "refold/memory_format.h"

namespace refold {

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "float32";
    case DType::BFloat16:
      return "bfloat16";
    case DType::Int64:
      return "int64";
  }
  return "?";
}

std::size_t element_size(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return 4;
    case DType::BFloat16:
      return 2;
    case DType::Int64:
      return 8;
  }
  return 0;
}

std::string_view memory_format_name(MemoryFormat format) {
  switch (format) {
    case MemoryFormat::Contiguous:
      return "contiguous";
    case MemoryFormat::ChannelsLast:
      return "channels_last";
    case MemoryFormat::Preserve:
      return "preserve";
  }
  return "?";
}

}  // namespace refold
