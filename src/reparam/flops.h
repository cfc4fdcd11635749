// FLOP counting for the re-parameterizable blocks (RepBlock::flops), shape by shape. The
// convention, stated once (refold/reparam/block.h): a convolution costs 2 per multiply-add and 1
// per bias add, BatchNorm 2 per element (scale and shift), a sum of n branches n − 1 per
// element, an average pool K_h·K_w per output element; activations and padding cost nothing.
// All arithmetic is overflow-checked.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string_view>

#include "refold/nn/conv.h"
#include "refold/nn/pooling.h"
#include "refold/tensor.h"

namespace refold::reparam::detail {

struct Counted {
  std::int64_t flops = 0;
  Shape output;
};

// `input` must be 4-d [N, C, H, W] with C == the conv's in_channels; `what` names the caller
// in errors.
Counted conv_flops(std::string_view what, const nn::Conv2d& conv, const Shape& input);
Counted avg_pool_flops(std::string_view what, const nn::AvgPool2d& pool, const Shape& input);
std::int64_t batch_norm_flops(std::string_view what, const Shape& shape);
// Adding `terms` tensors of `shape`.
std::int64_t sum_flops(std::string_view what, const Shape& shape, std::int64_t terms);
// [N, C, H + 2p, W + 2p].
Shape padded(const Shape& shape, std::int64_t pad);
// Σ of the values, overflow-checked.
std::int64_t total(std::string_view what, std::initializer_list<std::int64_t> values);

}  // namespace refold::reparam::detail
