// alpha · (a · b) for float32 matrices too small for oneDNN's matmul to pay its cost per call:
// attention's per-head products (EfficientViT-M0's qᵀ·k, [4, 49, 16] · [4, 16, 49], 0.3 MFLOP,
// took oneDNN 10–17 µs, 10–20 GFLOP/s; 48 of them were 17 % of the model's time).
//
//   y[i…][m][n] = alpha · Σ_k a[i…][m][k] · b[i…][k][n]
//
// a [..., M, K] and b [..., K, N] with NumPy-broadcast batch dims (as onednn::matmul) and any
// strides; y is contiguous [batch..., M, N]. Per matrix: b, scaled by alpha, is packed into the
// micro-kernel's 16-column blocks (micro_kernel.h; N rounded up to 8 with zero columns), a's
// rows are read in place when k is their unit stride (else packed), and rows × 32-column panels
// of y run through multiply_panel straight into y — but for a last panel that ends past N
// (N not a multiple of 8), which lands in scratch and is copied out. Matrices are split between
// threads.
// Takes: float32, rank ≥ 2 with a's K = b's K, at least one element, M ≥ 6 and N ≥ 8 (below,
// the packing copies weigh like the product), AVX2 and FMA, and at most kSmallMatmulFlops
// multiply-adds per call (larger products are oneDNN's: its blocking and packing pay off there).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "refold/tensor.h"

namespace refold::native {

// The largest product (batch · M · N · K multiply-adds) small_matmul takes. Measured against
// oneDNN's matmul on the same call, hot in cache (bench/matmul_bench.cpp, Xeon model 207, 2
// threads, medians of alternating pairs): 4×16×16×16 2.4 against 4.4 µs, 4×16×49×49 (0.15 M)
// 5.2 against 5.7, 4×49×16×49 6.7 against 6.3, 8×49×32×49 (0.6 M) 11.7 against 10.4, and oneDNN
// ahead from there (4×196×16×196: 32 against 23 µs). In a whole model oneDNN's call costs
// more than it does hot (EfficientViT-M0's 48 products of ≤ 0.15 M: 0.46 → 0.31 ms); the cap
// keeps the products where native is even or ahead in isolation.
inline constexpr std::int64_t kSmallMatmulFlops = std::int64_t{1} << 18;

// `max_flops`: the cap (bench/matmul_bench.cpp lifts it to find where oneDNN overtakes).
Tensor small_matmul(const Tensor& a, const Tensor& b, float alpha, std::string* declined,
                    std::int64_t max_flops = kSmallMatmulFlops);

// b [K, N] packed once for many products with it — a recurrence's Rᵀ, multiplied by each
// step's H (recurrent.h) — in the blocks small_matmul packs per call. b[k][n] is at
// b + k·row_stride + n·col_stride.
class PackedMatrix {
 public:
  PackedMatrix(const float* b, std::int64_t k, std::int64_t n, std::int64_t row_stride,
               std::int64_t col_stride);
  std::int64_t k() const { return k_; }
  std::int64_t n() const { return n_; }
  const float* blocks() const { return blocks_.data(); }

 private:
  std::int64_t k_, n_;
  std::vector<float> blocks_;
};

// y [M, N] (rows ldy apart) = a [M, K] (rows lda apart, K in unit stride) · b + bias [N] (null:
// none), on the calling thread. Needs AVX2 and FMA (cpu_has_avx2_fma()); any M ≥ 1 and N ≥ 1.
void multiply_packed(const float* a, std::int64_t m, std::int64_t lda, const PackedMatrix& b,
                     const float* bias, float* y, std::int64_t ldy);

}  // namespace refold::native
