#include "kernels/native/channel_mix.h"

#include <algorithm>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

namespace refold::native {
namespace {

constexpr const char* kOp = "channel_mix";
constexpr std::int64_t kBlock = 64;  // columns per block: 8 AVX2 accumulators per output row

// One block of `width` columns (kBlock for the full ones, so the loops unroll into registers):
// y[n][j] = b[n] + Σ_k x[k][j] · w[k][n], rows `stride` apart in x and y.
template <std::int64_t kWidth>
REFOLD_TARGET_AVX2 void mix_block(const float* x, const float* w, const float* b, std::int64_t k,
                                  std::int64_t n, std::int64_t stride, std::int64_t width,
                                  float* y) {
  const std::int64_t cols = kWidth > 0 ? kWidth : width;
  for (std::int64_t out = 0; out < n; ++out) {
    float acc[kBlock];
    const float start = b != nullptr ? b[out] : 0.0f;
    for (std::int64_t j = 0; j < cols; ++j) acc[j] = start;
    for (std::int64_t in = 0; in < k; ++in) {
      const float weight = w[in * n + out];
      const float* row = x + in * stride;
      for (std::int64_t j = 0; j < cols; ++j) acc[j] += weight * row[j];
    }
    float* dst = y + out * stride;
    for (std::int64_t j = 0; j < cols; ++j) dst[j] = acc[j];
  }
}

}  // namespace

Tensor channel_mix(const Tensor& x, const Tensor& w, const Tensor& b, std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline(kOp, "the CPU lacks AVX2/FMA", declined);
  if (x.dtype() != DType::Float32 || w.dtype() != DType::Float32 || x.dim() != 3 || w.dim() != 2 ||
      !x.is_contiguous() || !w.is_contiguous() || x.size(1) != w.size(0))
    return decline(kOp, "not contiguous float32 x [outer, K, inner] and w [K, N]", declined);
  if (w.numel() > kMaxChannelMix)
    return decline(kOp, "K·N is over kMaxChannelMix: oneDNN's GEMM is the faster", declined);
  if (b.defined() && (b.dtype() != DType::Float32 || b.numel() != w.size(1) || !b.is_contiguous()))
    return decline(kOp, "the bias is not N contiguous float32 values", declined);
  const std::int64_t outer = x.size(0), k = x.size(1), inner = x.size(2), n = w.size(1);
  Tensor y = empty({outer, n, inner});
  if (y.numel() == 0) return y;
  const float* in = x.data<float>();
  const float* weights = w.data<float>();
  const float* bias = b.defined() ? b.data<float>() : nullptr;
  float* out = y.data<float>();
  const std::int64_t blocks = (inner + kBlock - 1) / kBlock;
  const int threads = row_kernel_threads(x.numel() + y.numel());
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t task = 0; task < outer * blocks; ++task) {
    const std::int64_t o = task / blocks, column = task % blocks * kBlock;
    const std::int64_t width = std::min(kBlock, inner - column);
    const float* src = in + o * k * inner + column;
    float* dst = out + o * n * inner + column;
    if (width == kBlock)
      mix_block<kBlock>(src, weights, bias, k, n, inner, width, dst);
    else
      mix_block<0>(src, weights, bias, k, n, inner, width, dst);
  }
  return y;
}

}  // namespace refold::native
