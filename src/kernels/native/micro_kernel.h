// The one matrix-product micro-kernel of refold's own conv kernels, in an AVX2 and an AVX-512
// form (call only where cpu_has_avx2_fma(), cpu.h; multiply_panel picks the form of
// vector_isa()). For a panel of up to 6 rows and `width` (8, 16, 24 or 32) output channels it
// computes
//
//   C[r][o] = Σ_t Σ_k A_t[r][k] · B[t][k][o]        r < rows ≤ 6, t < taps, k < depth
//
// (with Panel::tap_ids, B[tap_ids[t]] in place of B[t]), where row r of A_t starts at
// a[t·6 + r] + a_offset (every (tap, row) its own pointer: rows may be any pixels, and a tap
// that falls into the padding points at zeros), B is one or two consecutive packed blocks, each
// [taps][depth][its width] (the first 16 wide when there are two, the second at
// b + taps·depth·16; block_taps in place of taps with tap_ids), and C row r is at c + r·ldc.
// Then it stores C through the epilogue (epilogue.h) when one is given, else as is.
//   Winograd (winograd_conv2d.h): 1 tap; rows are transformed tiles, k input channels.
//   Direct conv (direct_conv2d.h): kh·kw taps (the kernel's offsets in the input); rows are
//   output pixels, k input channels.
// AVX2: register-blocked 6 rows × 16 columns, 12 accumulators, two B loads and six broadcasts of
// A per k (the classic shape for AVX2's 16 vector registers); 32 columns are two such passes.
// AVX-512: 6 rows × 32 columns in one pass, 12 accumulators of 16 lanes, the same two B loads and
// six broadcasts per k for twice the FMAs.
#pragma once

#include <cstdint>

#include "kernels/native/epilogue.h"

namespace refold::native {

inline constexpr std::int64_t kPanelRows = 6;
// Output channels per packed weight column block: 16, the last block of a layer 8 when C_out is
// an odd multiple of 8. Both kernels pack their weights in such blocks (B above).
inline constexpr std::int64_t kBlockWidth = 16;
// Output channels per multiply_panel call: up to two blocks.
inline constexpr std::int64_t kPanelWidth = 2 * kBlockWidth;

struct Panel {
  std::int64_t rows = 0;            // 1…6
  const float* const* a = nullptr;  // taps × kPanelRows pointers, tap-major
  std::int64_t a_offset = 0;        // added to each of them (a grouped conv's first input channel)
  std::int64_t taps = 1;
  // When set, a's t-th group of row pointers is for B's tap tap_ids[t] (t < taps), and B's
  // blocks hold block_taps taps: the direct conv leaves out the taps that read only padding
  // for every row of the panel. Null: the groups are B's taps 0…taps−1.
  const std::int64_t* tap_ids = nullptr;
  std::int64_t block_taps = 0;
  std::int64_t depth = 0;
  const float* b = nullptr;
  std::int64_t width = 16;  // 8, 16, 24 or 32
  float* c = nullptr;
  std::int64_t ldc = 0;
  // Applied at the store when non-null: bias from `channel`, residual at `c_offset` + the
  // element's offset from c (c_offset: c's own offset in the output).
  const Epilogue* epilogue = nullptr;
  std::int64_t channel = 0;
  std::int64_t c_offset = 0;
};

// With the kernel of vector_isa().
void multiply_panel(const Panel& p);

// One form's kernel for one row count (each form keeps a table of them).
using RowKernel = void (*)(const Panel&);

namespace detail {
// B's taps per block (block_taps with tap_ids, else taps), and the index in B of a's tap t.
inline std::int64_t block_taps(const Panel& p) { return p.tap_ids ? p.block_taps : p.taps; }
inline std::int64_t tap_id(const Panel& p, std::int64_t t) { return p.tap_ids ? p.tap_ids[t] : t; }

// One form each (tests compare them); the AVX-512 one only where cpu_has_avx512().
void multiply_panel_avx2(const Panel& p);
void multiply_panel_avx512(const Panel& p);
}  // namespace detail

}  // namespace refold::native
