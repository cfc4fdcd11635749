// A post-op chain (refold/post_ops.h) applied to a tensor on its own, in one pass over memory:
// what several elementwise nodes in a row compute (BatchNormalization → Relu before a conv,
// a Mul → Add → activation not after a conv), each element read and written once.
//
//   y = post(x):  act(x + residual), then each step act(y·scale + shift [+ residual])
//
// Float32, 4-d, x contiguous NCHW or NHWC (the output in x's layout); the residual, if any,
// with x's sizes and dtype, contiguous in x's layout; AVX2 and FMA. The same epilogue as the
// native convs (epilogue.h), 8 channels (NHWC) or 8 pixels of one channel (NCHW) per vector.
// Anything else is declined with a reason (kernels/dispatch.h). Work is split across refold's
// threads.
#pragma once

#include <string>
#include <vector>

#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::native {

Tensor elementwise_chain(const Tensor& x, const PostOps& post, std::string* declined);

// post(concat(inputs, channels)) in the same one pass: each input read once, the concat written
// once, never the concat and then the chain (DenseNet's Concat → BatchNormalization → Relu).
// Float32 4-d inputs, all channels_last, alike but in C; no residual; the output NHWC. Anything
// else (other layouts, invalid shapes, which the reference then rejects) is declined.
Tensor concat_chain(const std::vector<Tensor>& inputs, const PostOps& post, std::string* declined);

}  // namespace refold::native
