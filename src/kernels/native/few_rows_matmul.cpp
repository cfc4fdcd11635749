// native/few_rows_matmul.h.
#include "kernels/native/few_rows_matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>

#include "kernels/native/tail_mask.h"
#endif

namespace refold::native {
namespace {

struct Operands {
  const float* a;  // [M, K], row-major
  const float* b;  // [K, N], rows ldb apart
  float* y;        // [M, N], row-major
  std::int64_t m, k, n, ldb;
};

#if REFOLD_HAVE_X86_KERNELS
// Columns [n0, n1) of y, M rows: per tile of 4 vectors of 16 lanes, Σ_k a[m][k] · b[k][tile].
template <int M>
REFOLD_TARGET_AVX512 void columns_avx512(const Operands& o, std::int64_t n0, std::int64_t n1) {
  constexpr int V = 4;
  for (std::int64_t n = n0; n < n1; n += 16 * V) {
    __mmask16 mask[V];
    for (int v = 0; v < V; ++v) {
      const std::int64_t left = std::clamp<std::int64_t>(n1 - n - 16 * v, 0, 16);
      mask[v] = static_cast<__mmask16>((1u << left) - 1);
    }
    __m512 acc[M][V];
    for (int m = 0; m < M; ++m)
      for (int v = 0; v < V; ++v) acc[m][v] = _mm512_setzero_ps();
    for (std::int64_t k = 0; k < o.k; ++k) {
      const float* row = o.b + k * o.ldb + n;
      __m512 b[V];
      for (int v = 0; v < V; ++v) b[v] = _mm512_maskz_loadu_ps(mask[v], row + 16 * v);
      for (int m = 0; m < M; ++m) {
        const __m512 a = _mm512_set1_ps(o.a[m * o.k + k]);
        for (int v = 0; v < V; ++v) acc[m][v] = _mm512_fmadd_ps(a, b[v], acc[m][v]);
      }
    }
    for (int m = 0; m < M; ++m)
      for (int v = 0; v < V; ++v)
        _mm512_mask_storeu_ps(o.y + m * o.n + n + 16 * v, mask[v], acc[m][v]);
  }
}

// The same with 2 vectors of 8 lanes (AVX2's 16 registers: 8 accumulators, 2 loads, 1 broadcast).
template <int M>
REFOLD_TARGET_AVX2 void columns_avx2(const Operands& o, std::int64_t n0, std::int64_t n1) {
  constexpr int V = 2;
  for (std::int64_t n = n0; n < n1; n += 8 * V) {
    __m256i mask[V];
    for (int v = 0; v < V; ++v) mask[v] = tail_mask(std::clamp<std::int64_t>(n1 - n - 8 * v, 0, 8));
    __m256 acc[M][V];
    for (int m = 0; m < M; ++m)
      for (int v = 0; v < V; ++v) acc[m][v] = _mm256_setzero_ps();
    for (std::int64_t k = 0; k < o.k; ++k) {
      const float* row = o.b + k * o.ldb + n;
      __m256 b[V];
      for (int v = 0; v < V; ++v) b[v] = _mm256_maskload_ps(row + 8 * v, mask[v]);
      for (int m = 0; m < M; ++m) {
        const __m256 a = _mm256_set1_ps(o.a[m * o.k + k]);
        for (int v = 0; v < V; ++v) acc[m][v] = _mm256_fmadd_ps(a, b[v], acc[m][v]);
      }
    }
    for (int m = 0; m < M; ++m)
      for (int v = 0; v < V; ++v)
        _mm256_maskstore_ps(o.y + m * o.n + n + 8 * v, mask[v], acc[m][v]);
  }
}

template <int M>
void columns(const Operands& o, std::int64_t n0, std::int64_t n1) {
  if (vector_isa() == VectorIsa::Avx512) return columns_avx512<M>(o, n0, n1);
  columns_avx2<M>(o, n0, n1);
}

void run(const Operands& o, std::int64_t n0, std::int64_t n1) {
  switch (o.m) {
    case 1:
      return columns<1>(o, n0, n1);
    case 2:
      return columns<2>(o, n0, n1);
    case 3:
      return columns<3>(o, n0, n1);
    default:
      return columns<4>(o, n0, n1);
  }
}
#endif

}  // namespace

Tensor few_rows_matmul(const Tensor& a, const Tensor& b, std::string* declined) {
  constexpr const char* name = "matmul";
  if (!cpu_has_avx2_fma()) return decline(name, "needs AVX2 and FMA", declined);
  if (!a.defined() || !b.defined() || a.dtype() != DType::Float32 || b.dtype() != DType::Float32)
    return decline(name, "not two float32 operands", declined);
  if (a.dim() < 1 || b.dim() != 2 || a.size(-1) != b.size(0))
    return decline(name, "not [..., K] · [K, N]", declined);
  const std::int64_t k = b.size(0), n = b.size(1);
  const std::int64_t m = k == 0 ? 0 : a.numel() / k;
  if (m > kFewRows || m == 0 || k == 0)
    return decline(name, fmt::format("{} rows of K = {}: not 1 to {}", m, k, kFewRows), declined);
  if (k >= kFewRowsMaxK)
    return decline(name,
                   fmt::format("K = {}: oneDNN's blocks waste nothing from {} on", k, kFewRowsMaxK),
                   declined);
  if (n < 64) return decline(name, fmt::format("N = {} under 64", n), declined);
  if (b.stride(1) != 1)
    return decline(
        name, fmt::format("b's strides [{}]: N not in unit stride", fmt::join(b.strides(), ", ")),
        declined);
  Shape out_sizes(a.sizes().begin(), a.sizes().end() - 1);
  out_sizes.push_back(n);
  Tensor y = empty(out_sizes, DType::Float32);
#if REFOLD_HAVE_X86_KERNELS
  const Tensor rows = a.contiguous();  // at most 4·K floats
  const Operands o{rows.data<float>(), b.data<float>(), y.data<float>(), m, k, n, b.stride(0)};
  // 64-column tiles (AVX-512's tile; AVX2's 16 divides it), split between threads.
  const int threads = threads_from(k * n, kParallelElements);
  const std::int64_t tiles = (n + 63) / 64;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t t = 0; t < tiles; ++t) run(o, t * 64, std::min(n, (t + 1) * 64));
#endif
  return y;
}

}  // namespace refold::native
