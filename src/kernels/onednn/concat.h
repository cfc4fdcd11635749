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

#include "refold/tensor.h"

namespace refold::onednn {

Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim, std::string* declined = nullptr);

struct ConcatStats {
  std::uint64_t runs = 0;
  std::uint64_t primitive_hits = 0;
  std::uint64_t primitive_misses = 0;
  std::size_t primitives = 0;
};
ConcatStats concat_stats();
void clear_concat_cache();

}  // namespace refold::onednn
