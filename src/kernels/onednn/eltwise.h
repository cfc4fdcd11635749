// oneDNN element-wise activations: relu, relu6, leaky_relu, sigmoid, silu, hardswish,
// hardsigmoid — the reference's ops (refold/reference.h), run by oneDNN's eltwise primitive.
//
// Contract (the same as conv2d.h's):
//   * Any rank, any dense layout (Tensor::is_non_overlapping_and_dense: NCHW, NHWC, any
//     permutation): oneDNN is handed the input's own strides, and the output has exactly those
//     strides (empty_like, MemoryFormat::Preserve) — the reference's layout rule.
//   * Arguments are validated as the reference validates them, with the same refold::Error
//     messages (undefined input, a dtype other than float32/bfloat16, a non-finite
//     negative_slope).
//   * Valid arguments oneDNN cannot take are *declined*: the result is an undefined Tensor and
//     `*declined` says why (a non-dense input, no elements, more dims than oneDNN's 12, bfloat16
//     without avx512_bf16, no oneDNN implementation); with declined == nullptr a decline throws.
//   * Primitives are cached (process-wide, thread-safe, least recently used) keyed by
//     (op, negative_slope, dtype, sizes, strides, threads).
// Precision: float32 in oneDNN's vectorised formulas (exp-based sigmoid/silu), within
// Tolerance::op_f32 of the double-precision reference.
// NaN (a known difference from the reference and PyTorch, pinned by OnednnOps.EltwiseNaN):
// oneDNN computes relu (α = 0) and clip (relu6, hardsigmoid's second step) with vector max/min,
// which return the bound for a NaN input — relu(NaN) = relu6(NaN) = hardsigmoid(NaN) = 0 —
// where the reference and PyTorch return NaN. leaky_relu, sigmoid, silu and hardswish propagate
// NaN as the reference does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/onednn/primitive_stats.h"
#include "kernels/reference/onnx_ops.h"
#include "refold/tensor.h"

namespace refold::onednn {

enum class EltwiseOp { ReLU, ReLU6, LeakyReLU, Sigmoid, SiLU, HardSwish, HardSigmoid };

// "relu", "relu6", ... (the reference's op names, used in messages).
std::string_view eltwise_name(EltwiseOp op);

// y = op(input); negative_slope is used by LeakyReLU only.
Tensor eltwise(EltwiseOp op, const Tensor& input, double negative_slope = 0.0,
               std::string* declined = nullptr);

// ONNX's element-wise functions (reference::unary) that oneDNN has an algorithm for — Abs, Neg,
// Sqrt, Exp, Tanh, Round, Mish, Softplus, Gelu (erf and tanh), Elu, Selu, Reciprocal, Pow —
// under the contract above; any other op, and an int64 input, is declined.
Tensor unary(reference::UnaryOp op, const Tensor& input, double alpha, double beta,
             std::string* declined = nullptr);

PrimitiveStats eltwise_stats();
// Drops every cached primitive and zeroes the counters.
void clear_eltwise_cache();

}  // namespace refold::onednn
