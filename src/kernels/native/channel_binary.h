// x · v or x + v for a float32 x dense in NHWC and v holding one value per channel ([1, C, 1, 1]
// or [C, 1, 1], any order of the operands): a squeeze-and-excitation block's x · s, a runtime
// per-channel scale or shift. oneDNN's binary ran it at 23–37 GB/s; here the pixels are split
// into one contiguous range per thread, the ranges the previous kernel wrote on each thread
// (oneDNN's and refold's kernels split their outputs by rows), so that each thread reads what is
// in its own core's cache: EfficientNet-B0's first squeeze-and-excitation Mul, 32 × 112², took
// 0.132 ms with oneDNN. 16 lanes with AVX-512, 8 with AVX2. Declined (kernels/dispatch.h): not
// float32, not NHWC, not a per-channel operand, no AVX2/FMA.
#pragma once

#include <string>

#include "refold/tensor.h"

namespace refold::native {

enum class ChannelOp { Mul, Add };

Tensor channel_binary(ChannelOp op, const Tensor& a, const Tensor& b, std::string* declined);

}  // namespace refold::native
