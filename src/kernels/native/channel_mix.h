// native::channel_mix — a small matrix mixing the rows of each [K, inner] slab:
//   y[o, n, i] = b[n] + Σ_k x[o, k, i] · w[k, n]        x [outer, K, inner], w [K, N], b [N]
// ops::AxisLinear's kernel where the mixed axis is short (CaiT's 4 talking heads): each block
// of 64 columns is read once from memory and every output row of it computed from the K rows in
// cache: 0.69–0.84× the time of oneDNN's GEMM at K = N = 4 (docs/native-kernels.md).
// Float32, x and w contiguous, K·N ≤ kMaxChannelMix, AVX2 + FMA; declines anything else.
#pragma once

#include <cstdint>
#include <string>

#include "refold/tensor.h"

namespace refold::native {

// The largest K·N taken: at 8 × 8 oneDNN's GEMM is already the faster over a long inner axis
// (docs/native-kernels.md, "Linear along an axis").
inline constexpr std::int64_t kMaxChannelMix = 32;

// y [outer, N, inner], contiguous; b may be undefined (no bias).
Tensor channel_mix(const Tensor& x, const Tensor& w, const Tensor& b, std::string* declined);

}  // namespace refold::native
