// gemm.h: the 6×16 (and 6×8) AVX2 micro-kernel and the loop over row panels.
#include "kernels/winograd/gemm.h"

#include "kernels/winograd/cpu.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>
#endif

namespace refold::winograd {

#if REFOLD_HAVE_X86_KERNELS
namespace {

constexpr std::int64_t kRows = 6;

// C[0..R)[0..8·V) = A[0..R)[0..depth) · B, with R ≤ 6 rows and V ∈ {1, 2} vectors of 8 columns.
// The accumulators are named variables, not an array: GCC keeps an array of vectors in registers
// but also stores it to the stack on every iteration, which halves the kernel's speed.
template <int R, int V>
REFOLD_TARGET_AVX2 void micro_kernel(std::int64_t depth, const float* a, std::int64_t lda,
                                     const float* b, float* c, std::int64_t ldc) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  const float *a0 = a, *a1 = a + lda, *a2 = a + 2 * lda, *a3 = a + 3 * lda, *a4 = a + 4 * lda,
              *a5 = a + 5 * lda;
  for (std::int64_t k = 0; k < depth; ++k, b += 8 * V) {
    const __m256 b0 = _mm256_loadu_ps(b);
    const __m256 b1 = V == 2 ? _mm256_loadu_ps(b + 8) : b0;
#define REFOLD_ROW(r)                                                 \
  if constexpr (R > r) {                                              \
    const __m256 av = _mm256_broadcast_ss(a##r + k);                  \
    c##r##0 = _mm256_fmadd_ps(av, b0, c##r##0);                       \
    if constexpr (V == 2) c##r##1 = _mm256_fmadd_ps(av, b1, c##r##1); \
  }
    REFOLD_ROW(0)
    REFOLD_ROW(1)
    REFOLD_ROW(2)
    REFOLD_ROW(3)
    REFOLD_ROW(4)
    REFOLD_ROW(5)
#undef REFOLD_ROW
  }
#define REFOLD_STORE(r)                                               \
  if constexpr (R > r) {                                              \
    _mm256_storeu_ps(c + r * ldc, c##r##0);                           \
    if constexpr (V == 2) _mm256_storeu_ps(c + r * ldc + 8, c##r##1); \
  }
  REFOLD_STORE(0)
  REFOLD_STORE(1)
  REFOLD_STORE(2)
  REFOLD_STORE(3)
  REFOLD_STORE(4)
  REFOLD_STORE(5)
#undef REFOLD_STORE
}

template <int V>
REFOLD_TARGET_AVX2 void row_panels(std::int64_t rows, std::int64_t depth, const float* a,
                                   std::int64_t lda, const float* b, float* c, std::int64_t ldc) {
  std::int64_t r = 0;
  for (; r + kRows <= rows; r += kRows)
    micro_kernel<kRows, V>(depth, a + r * lda, lda, b, c + r * ldc, ldc);
  const float* at = a + r * lda;
  float* ct = c + r * ldc;
  switch (rows - r) {
    case 5:
      micro_kernel<5, V>(depth, at, lda, b, ct, ldc);
      break;
    case 4:
      micro_kernel<4, V>(depth, at, lda, b, ct, ldc);
      break;
    case 3:
      micro_kernel<3, V>(depth, at, lda, b, ct, ldc);
      break;
    case 2:
      micro_kernel<2, V>(depth, at, lda, b, ct, ldc);
      break;
    case 1:
      micro_kernel<1, V>(depth, at, lda, b, ct, ldc);
      break;
    default:
      break;
  }
}

}  // namespace

void gemm_block(std::int64_t rows, std::int64_t depth, const float* a, std::int64_t lda,
                const float* b, std::int64_t width, float* c, std::int64_t ldc) {
  if (width == 16) {
    row_panels<2>(rows, depth, a, lda, b, c, ldc);
  } else {
    row_panels<1>(rows, depth, a, lda, b, c, ldc);
  }
}

#else

void gemm_block(std::int64_t, std::int64_t, const float*, std::int64_t, const float*, std::int64_t,
                float*, std::int64_t) {}

#endif

}  // namespace refold::winograd
