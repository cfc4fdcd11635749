// oneDNN matmul: a batched numpy.matmul of two float32 operands of rank 3 to 12, in one call
// (attention's q·kᵀ and attn·v over [batch, heads, tokens, dim]) — instead of one inner product
// per matrix, whose per-call cost dominated MobileViT's small attention matrices.
//
// Contract:
//   * a [..., M, K] and b [..., K, N], each read through its strides where matmul_reads() it
//     (a transposed kᵀ or a slice of a fused qkv needs no copy); their batch dims broadcast
//     (equal, or 1 in one of them; missing leading dims are 1). The output is [batch..., M, N],
//     contiguous, as the reference's — or written into a given `dst` of those sizes with any
//     positive strides and unit stride along N (matmul_into): a product read through a
//     permutation (attention's (attn · v).transpose(1, 2)) is written in the permuted order.
//   * Anything else — another dtype, fewer than 3 dims, operands it does not read, zero-sized
//     dims, mismatched sizes — is declined (undefined result, reason in *declined; with declined ==
//     nullptr a decline throws): the caller's fallback validates and reports invalid calls.
//   * Primitives are cached (process-wide, thread-safe, least recently used) keyed by both
//     operands' sizes and strides and the thread count.
// Precision: float32 with oneDNN's GEMM summation order, within Tolerance::op_f32.
#pragma once

#include <string>

#include "kernels/onednn/primitive_stats.h"
#include "refold/tensor.h"

namespace refold::onednn {

// alpha · (a · b), alpha applied as the primitive's output scale.
Tensor matmul(const Tensor& a, const Tensor& b, float alpha = 1.0f,
              std::string* declined = nullptr);

// matmul() written into dst ([batch..., M, N], every dim's own size, positive strides, unit stride
// along N); false, with the reason in *declined, where oneDNN does not take it (dst untouched).
bool matmul_into(const Tensor& a, const Tensor& b, float alpha, Tensor& dst,
                 std::string* declined = nullptr);

// Whether matmul reads t through its strides: every matrix row-major or column-major (unit
// stride along its rows or its columns, the other stride spanning the unit one), positive
// strides, batch dims laid out any way.
bool matmul_reads(const Tensor& t);

PrimitiveStats matmul_stats();

}  // namespace refold::onednn
