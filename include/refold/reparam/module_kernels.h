// Between the nn modules and the kernel algebra (refold/reparam/kernel_algebra.h): read a
// Conv2d, ConvTranspose2d or BatchNorm2d as values, and build the fused module back from a
// kernel. The blocks' reparameterize() is these two steps around the algebra:
//
//   using namespace refold::reparam;
//   ConvKernel k = sum_branches({fold_batch_norm(kernel_of(*dense), params_of(*dense_bn)), ...});
//   auto fused = make_conv2d(k, dense->options(), dense->weight().suggest_memory_format());
//
// Stride, padding and dilation of the fused conv come from the branch whose geometry the
// others were aligned to; channels, kernel size, groups and bias come from the kernel.
// The read functions copy nothing (the values share the modules' tensors); the make functions
// copy the kernel, so the new module owns its parameters.
#pragma once

#include <memory>

#include "refold/memory_format.h"
#include "refold/nn/batchnorm.h"
#include "refold/nn/conv.h"
#include "refold/reparam/kernel_algebra.h"

namespace refold::reparam {

ConvKernel kernel_of(const nn::Conv2d& conv);
ConvTransposeKernel kernel_of(const nn::ConvTranspose2d& conv);
BatchNormParams params_of(const nn::BatchNorm2d& bn);

// A Conv2d holding `kernel` (bias iff kernel.bias is defined), with the stride, padding and
// dilation of `geometry`; its weight is laid out in `weight_format` (Contiguous or
// ChannelsLast), so a model converted to channels_last stays converted.
std::shared_ptr<nn::Conv2d> make_conv2d(const ConvKernel& kernel, const nn::Conv2dOptions& geometry,
                                        MemoryFormat weight_format = MemoryFormat::Contiguous);
// A ConvTranspose2d holding `kernel`, with the stride, padding, output_padding and dilation of
// `geometry`.
std::shared_ptr<nn::ConvTranspose2d> make_conv_transpose2d(
    const ConvTransposeKernel& kernel, const nn::ConvTranspose2dOptions& geometry,
    MemoryFormat weight_format = MemoryFormat::Contiguous);

}  // namespace refold::reparam
