// torch.nn.utils.convert_conv2d_weight_memory_format, in C++.
//
// Converts only the convolution weights to `format`, so that every Conv2d/ConvTranspose2d
// computes in that format, while layers that gain nothing from it are left alone:
//
//   nn::utils::convert_conv2d_weight_memory_format(*model, MemoryFormat::ChannelsLast);
//   Tensor y = (*model)(x);   // x NCHW: permuted once at the first conv, and stays
//                             // channels_last through layers that accept it
//
// An activation goes back to contiguous only at a module whose accepts_channels_last() is
// false, and is permuted again at the next conv (see nn/module.h). Compare Module::to(format),
// the aggressive variant that converts every 4-d parameter and buffer.
#pragma once

#include <cstddef>

#include "refold/memory_format.h"
#include "refold/nn/module.h"

namespace refold::nn::utils {

// Recursive over `module` and every module nested in it, `module` included. Converts the
// "weight" of each Conv2d and ConvTranspose2d (and their subclasses) in place: the same
// parameter handle keeps its name and every holder sees the new layout; biases and all other
// modules are untouched. `format` is Contiguous or ChannelsLast (Preserve is rejected).
// Returns `module`.
Module& convert_conv2d_weight_memory_format(Module& module, MemoryFormat format);

// Fuses activations into the convolutions before them, so each runs inside the conv's
// primitive (Conv2d::set_activation) instead of as a second pass over the conv's output:
//
//   Sequential(Conv2d, ReLU, Conv2d, BatchNorm2d, ReLU)
//     → Sequential(Conv2d[relu], Identity, Conv2d, BatchNorm2d, ReLU)
//
// In every Sequential in `module` (recursively, `module` included), a child that is exactly an
// nn::Conv2d (not a subclass, whose forward may not apply the activation) with no activation
// yet, directly followed by a ReLU, ReLU6, LeakyReLU, Sigmoid, SiLU, Hardswish or Hardsigmoid
// child, takes that activation, and the activation child is replaced by an nn::Identity under
// the same name. Parameters, buffers and state_dict() keys are unchanged; the output is the
// same up to rounding (one rounding less in bfloat16). Returns the number of pairs fused.
std::size_t fuse_conv_activations(Module& module);

}  // namespace refold::nn::utils
