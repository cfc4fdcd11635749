// oneDNN concat: functional::cat for inputs that share one dense layout.
//
// Contract:
//   * The output's layout is the reference's: channels_last when every input is 4-d and
//     suggests channels_last, else contiguous. oneDNN runs when every input is contiguous in
//     that layout (NCHW or NHWC, or row-major at any rank ≤ 12), float32 or bfloat16 (a copy:
//     no bf16 arithmetic, so no avx512_bf16 needed).
//   * Anything else — mixed layouts, a strided input, zero-sized inputs, and every *invalid*
//     argument — is declined (undefined result, reason in *declined; with declined == nullptr a
//     decline throws), so the reference validates and rejects invalid calls with its messages.
//   * Primitives are cached keyed by (dtype, layout, dim, every input's sizes, threads).
// Exact: the result is bit-identical to the reference's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/onednn/primitive_stats.h"
#include "refold/tensor.h"

namespace refold::onednn {

Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim, std::string* declined = nullptr);

PrimitiveStats concat_stats();

}  // namespace refold::onednn
