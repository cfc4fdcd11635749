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

#include "refold/memory_format.h"
#include "refold/nn/module.h"

namespace refold::nn::utils {

// Recursive over `module` and every module nested in it, `module` included. Converts the
// "weight" of each Conv2d and ConvTranspose2d (and their subclasses) in place: the same
// parameter handle keeps its name and every holder sees the new layout; biases and all other
// modules are untouched. `format` is Contiguous or ChannelsLast (Preserve is rejected).
// Returns `module`.
Module& convert_conv2d_weight_memory_format(Module& module, MemoryFormat format);

}  // namespace refold::nn::utils
