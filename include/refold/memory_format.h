// Memory formats, with PyTorch's meaning: a 4-d tensor's sizes are always the logical
// (N, C, H, W); the memory format only says how its strides lay those elements out.
//   Contiguous   — NCHW: strides (C·H·W, H·W, W, 1)
//   ChannelsLast — NHWC: strides (H·W·C, 1, W·C, C)
//   Preserve     — keep the input's format (only meaningful where a tensor is derived from
//                  another one: empty_like, to(dtype), module conversions).
#pragma once

#include <cstdint>
#include <string_view>

namespace refold {

enum class MemoryFormat : std::uint8_t { Contiguous, ChannelsLast, Preserve };

std::string_view memory_format_name(MemoryFormat format);  // "contiguous", "channels_last", ...

}  // namespace refold
