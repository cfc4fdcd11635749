// a · b for an a of at most 4 rows: y[m][n] = Σ_k a[m][k] · b[k][n], reading b [K, N] once, in
// place, row after row (unit stride along N), a broadcast lane at a time into 4 × (2 or 4) vector
// accumulators per 16- or 64-column tile. Such a product is a stream over b: memory-bound, one
// FMA per element of b per row of a.
//
// CondConv's expert mixing (timm's EfficientNet-CC: each conv's weight = routing [1, E] · experts
// [E, C_out·C_in·k·k], E = 4) is one: oneDNN's inner product packs the weight with K padded to
// its block, and read 4 floats for each of the 4 it uses (8.5 GB/s, 5.6 ms of the model's 15).
//
// Takes: float32, a [..., K] with at most kFewRows rows in all (the leading dims flattened), K
// under kFewRowsMaxK, b [K, N] with unit stride along N, N ≥ 64, AVX2 and FMA. y is contiguous
// [..., N]. N is split between threads from kParallelElements elements of b on.
// Measured against oneDNN's inner product on the same MatMul node (bench/compare_builds.py, Xeon
// model 207, 2 threads): [1, 4] · [4, 300000] 0.100 against 0.251 ms; from K = 16 on oneDNN's
// blocks waste nothing, and its packed weight streams better: [2, 64] · [64, 20000] 0.085
// against 0.088, [4, 512] · [512, 2048] 0.069 against 0.064, [1, 1280] · [1280, 1000] 0.083
// against 0.080.
#pragma once

#include <cstdint>
#include <string>

#include "refold/tensor.h"

namespace refold::native {

inline constexpr std::int64_t kFewRows = 4;
inline constexpr std::int64_t kFewRowsMaxK = 16;

Tensor few_rows_matmul(const Tensor& a, const Tensor& b, std::string* declined);

}  // namespace refold::native
