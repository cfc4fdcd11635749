// How module conversions (Module::to(MemoryFormat), convert_conv2d_weight_memory_format) lay a
// parameter out in a memory format.
#pragma once

#include "refold/memory_format.h"
#include "refold/tensor.h"

namespace refold::nn::detail {

// Returns `t` laid out in `format` (Contiguous or ChannelsLast) so that afterwards, as in
// PyTorch, t.is_contiguous(format) holds AND t.suggest_memory_format() answers `format`
// wherever strides can say so.
//
// Tensor::contiguous(format) alone is not enough for the ambiguous shapes of
// Note [Ambiguous memory formats]: a 1×1 conv weight [O, I, 1, 1] made NCHW is already
// "contiguous" in channels_last (size-1 dims' strides are ignored), so contiguous() returns it
// unchanged, it keeps suggesting NCHW, and its conv would never run channels_last. PyTorch
// restrides such a tensor (convert_conv2d_weight_memory_format calls resize_(memory_format=…),
// Module.to copies whenever suggest_memory_format() differs). Here such a tensor gets the
// format's canonical strides as a view over the same storage: the non-size-1 strides are
// already right, so the same elements are addressed, no data moves and no permute is counted.
Tensor to_memory_format(const Tensor& t, MemoryFormat format);

}  // namespace refold::nn::detail
