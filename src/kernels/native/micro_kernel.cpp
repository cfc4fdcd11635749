// micro_kernel.h: the 6×16 (and 6×8) AVX2 micro-kernel, and the choice of form.
#include "kernels/native/micro_kernel.h"

namespace refold::native {

#if REFOLD_HAVE_X86_KERNELS
namespace {

// Row r, vector v of the block: as is, or through the epilogue.
REFOLD_TARGET_AVX2 inline void store(const Panel& p, std::int64_t r, std::int64_t v, __m256 acc) {
  const std::int64_t offset = r * p.ldc + 8 * v;
  if (p.epilogue != nullptr) acc = finish(acc, *p.epilogue, p.channel + 8 * v, p.c_offset + offset);
  _mm256_storeu_ps(p.c + offset, acc);
}

// R ≤ 6 rows, V ∈ {1, 2} vectors of 8 columns. The accumulators are named variables, not an
// array: GCC keeps an array of vectors in registers but also stores it to the stack on every
// iteration, which halves the kernel's speed.
template <int R, int V>
REFOLD_TARGET_AVX2 void micro_kernel(const Panel& p) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (std::int64_t t = 0; t < p.taps; ++t) {
    const float* b = p.b + detail::tap_id(p, t) * p.depth * 8 * V;
    const float* const* rows = p.a + t * kPanelRows;
    const float* a0 = rows[0] + p.a_offset;
    const float* a1 = R > 1 ? rows[1] + p.a_offset : a0;
    const float* a2 = R > 2 ? rows[2] + p.a_offset : a0;
    const float* a3 = R > 3 ? rows[3] + p.a_offset : a0;
    const float* a4 = R > 4 ? rows[4] + p.a_offset : a0;
    const float* a5 = R > 5 ? rows[5] + p.a_offset : a0;
    for (std::int64_t k = 0; k < p.depth; ++k, b += 8 * V) {
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
  }
#define REFOLD_STORE(r)                            \
  if constexpr (R > r) {                           \
    store(p, r, 0, c##r##0);                       \
    if constexpr (V == 2) store(p, r, 1, c##r##1); \
  }
  REFOLD_STORE(0)
  REFOLD_STORE(1)
  REFOLD_STORE(2)
  REFOLD_STORE(3)
  REFOLD_STORE(4)
  REFOLD_STORE(5)
#undef REFOLD_STORE
}

// The kernel for p.rows (1…6): a table, not a switch per form.
template <int V>
void dispatch_rows(const Panel& p) {
  static constexpr RowKernel kByRows[kPanelRows] = {micro_kernel<1, V>, micro_kernel<2, V>,
                                                    micro_kernel<3, V>, micro_kernel<4, V>,
                                                    micro_kernel<5, V>, micro_kernel<6, V>};
  kByRows[p.rows - 1](p);
}

// One block: 16 columns, or 8.
REFOLD_TARGET_AVX2 void multiply_block(const Panel& p) {
  if (p.width == kBlockWidth) {
    dispatch_rows<2>(p);
  } else {
    dispatch_rows<1>(p);
  }
}

}  // namespace

namespace detail {

void multiply_panel_avx2(const Panel& p) {
  if (p.width <= kBlockWidth) {
    multiply_block(p);
    return;
  }
  // Two blocks: the first 16 columns, then the rest from the second block.
  Panel first = p;
  first.width = kBlockWidth;
  multiply_block(first);
  Panel second = p;
  second.b = p.b + block_taps(p) * p.depth * kBlockWidth;
  second.width = p.width - kBlockWidth;
  second.c = p.c + kBlockWidth;
  second.channel = p.channel + kBlockWidth;
  second.c_offset = p.c_offset + kBlockWidth;
  multiply_block(second);
}

}  // namespace detail

void multiply_panel(const Panel& p) {
  if (vector_isa() == VectorIsa::Avx512) {
    detail::multiply_panel_avx512(p);
  } else {
    detail::multiply_panel_avx2(p);
  }
}

#else

void multiply_panel(const Panel&) {}
namespace detail {
void multiply_panel_avx2(const Panel&) {}
}  // namespace detail

#endif

}  // namespace refold::native
