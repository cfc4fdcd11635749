// oneDNN batch normalization, inference (running statistics) — the reference's batch_norm
// (refold/reference.h), run by oneDNN's batch_normalization primitive with
// use_global_stats | use_scale | use_shift.
//
// Contract (the same as conv2d.h's):
//   * input of rank 2 to 5 (oneDNN's range), any dense layout (NCHW, NHWC, ...): oneDNN is
//     handed its own strides, and the output has exactly those strides (the reference's rule).
//     running_mean, running_var, weight, bias are read once per call into float32 vectors
//     (C values each); weight/bias undefined means 1/0 (affine=False).
//   * Arguments are validated first, as the reference validates them, with the same
//     refold::Error messages — including a negative running_var or running_var + eps == 0.
//   * Declined: a non-dense input, no elements, rank outside 2..5, bfloat16 without
//     avx512_bf16, a variance + eps that is 0 only in float32 (eps below float's range), no
//     oneDNN implementation. With declined == nullptr a decline throws refold::Error.
//   * Primitives are cached (process-wide, thread-safe, least recently used) keyed by
//     (dtype, sizes, strides, eps, threads).
// Precision: oneDNN computes in float32 (eps as float), within Tolerance::op_f32 of the
// reference's double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/onednn/primitive_stats.h"
#include "refold/tensor.h"

namespace refold::onednn {

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps,
                  std::string* declined = nullptr);

PrimitiveStats batch_norm_stats();
// Drops every cached primitive and zeroes the counters.
void clear_batch_norm_cache();

}  // namespace refold::onednn
