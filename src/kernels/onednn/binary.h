// oneDNN element-wise add, mul, sub and div with NumPy broadcasting — the reference's ops
// (refold/reference.h, reference::arith), run by oneDNN's binary primitive.
//
// Contract (the same as conv2d.h's):
//   * oneDNN's binary takes src0 at the output's shape and lets only src1 broadcast (size-1 or
//     missing leading dims). So the operand that already has the output's shape is src0 — `a`
//     when it has it, else `b` (a + b = b + a and a · b = b · a exactly in IEEE arithmetic) —
//     and the output takes that operand's strides (empty_like, MemoryFormat::Preserve): the
//     reference's layout rule. When neither has the output's shape ([3, 1] + [1, 4]) the call
//     is declined; so is a sub or div whose first operand broadcasts (a − b ≠ b − a).
//   * Both operands must be dense (Tensor::is_non_overlapping_and_dense), in any layout; oneDNN
//     is handed their own strides. Expanded (stride-0) or sliced operands are declined.
//   * Arguments are validated as the reference validates them, with the same refold::Error
//     messages (undefined operands, dtypes, mixed dtypes, shapes that cannot broadcast).
//   * Other declines: no elements, more dims than oneDNN's 12, bfloat16 without avx512_bf16,
//     no oneDNN implementation. With declined == nullptr a decline throws refold::Error.
//   * Primitives are cached (process-wide, thread-safe, least recently used) keyed by
//     (op, dtype, both operands' sizes and strides, threads).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kernels/onednn/primitive_stats.h"
#include "refold/tensor.h"

namespace refold::onednn {

enum class BinaryOp { Add, Mul, Sub, Div };

std::string_view binary_name(BinaryOp op);  // "add", "mul", "sub", "div"

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, std::string* declined = nullptr);

PrimitiveStats binary_stats();
// Drops every cached primitive and zeroes the counters.
void clear_binary_cache();

}  // namespace refold::onednn
