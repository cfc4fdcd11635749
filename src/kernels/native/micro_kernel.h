// The matrix products of the Winograd conv (tiles.h): for one position ξ and one column block
// of output channels,
//   C[r][o] = Σ_k A[r][k] · B[k][o]      r < rows, o < width, k < depth
// A row-major with row stride lda (transformed input tiles × input channels), B packed
// [depth][width] (transformed weights, tiles.h), C row-major with row stride ldc; C is
// overwritten. width is 16 or 8. AVX2 + FMA: call only where cpu_has_avx2_fma() (cpu.h).
// Register-blocked 6 rows × 16 columns: 12 accumulators, two B loads and six broadcasts of A
// per k — the classic shape for 16 ymm registers.
#pragma once

#include <cstdint>

namespace refold::winograd {

void gemm_block(std::int64_t rows, std::int64_t depth, const float* a, std::int64_t lda,
                const float* b, std::int64_t width, float* c, std::int64_t ldc);

}  // namespace refold::winograd
