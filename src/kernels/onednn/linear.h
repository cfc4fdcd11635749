// oneDNN matmul on packed weights: functional::linear (y = act(x·Wᵀ + b + r)) for float32.
//
// Contract:
//   * input [..., in_features] contiguous (row-major; the leading dims are flattened into the
//     batch), weight [out_features, in_features] dense with any 2-d strides (reordered once into
//     the primitive's own format and cached, kernels/onednn/packed_weights.h: onednn::cache_stats
//     counts it), bias [out_features] or undefined. The output is [..., out_features], contiguous,
//     as the reference's.
//   * post (refold/post_ops.h): its activation runs as eltwise post-ops and its residual r — the
//     output's sizes, contiguous — as a binary_add post-op before it (a transformer's
//     x + proj(y)). Steps (post.then) are declined: they are per channel of NCHW, not per
//     feature.
//   * Anything else — a non-contiguous input, bfloat16, zero-sized dims, and every *invalid*
//     argument — is declined (undefined result, reason in *declined; with declined == nullptr a
//     decline throws), so the dispatch's reference fallback validates and rejects invalid calls
//     with its own messages.
//   * Primitives are cached (process-wide, thread-safe, least recently used) keyed by
//     (batch, in, out, packed or the weight's strides, bias or not, residual or not, activation,
//     threads); a weight is packed from its second call on (a constant), never when every call
//     brings a new one (kernels/onednn/packed_weights.h).
// Precision: float32 with oneDNN's GEMM summation order, within Tolerance::op_f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/onednn/primitive_stats.h"
#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::onednn {

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, const PostOps& post,
              std::string* declined = nullptr);

PrimitiveStats linear_stats();

}  // namespace refold::onednn
