// The one matrix-product micro-kernel of refold's own conv kernels (AVX2 + FMA; call only where
// cpu_has_avx2_fma(), cpu.h). For a panel of up to 6 rows and a block of `width` (16 or 8)
// output channels it computes
//
//   C[r][o] = Σ_t Σ_k A_t[r][k] · B[t][k][o]        r < rows ≤ 6, t < taps, k < depth
//
// where row r of A_t starts at a[t·6 + r] (every (tap, row) its own pointer: rows may be any
// pixels, and a tap that falls into the padding points at zeros), B is packed
// [taps][depth][width], and C row r is at c + r·ldc. Then it
// stores C through the epilogue (epilogue.h) when one is given, else as is.
//   Winograd (winograd_conv2d.h): 1 tap; rows are transformed tiles, k input channels.
//   Direct conv (direct_conv2d.h): kh·kw taps (the kernel's offsets in the input); rows are
//   output pixels, k input channels.
// Register-blocked 6 rows × 16 columns: 12 accumulators, two B loads and six broadcasts of A
// per k — the classic shape for AVX2's 16 vector registers.
#pragma once

#include <cstdint>

#include "kernels/native/epilogue.h"

namespace refold::native {

inline constexpr std::int64_t kPanelRows = 6;
// Output channels per packed weight column block: 16, the last block of a layer 8 when C_out is
// an odd multiple of 8. Both kernels pack their weights in such blocks (B above).
inline constexpr std::int64_t kBlockWidth = 16;

struct Panel {
  std::int64_t rows = 0;            // 1…6
  const float* const* a = nullptr;  // taps × kPanelRows pointers, tap-major
  std::int64_t taps = 1;
  std::int64_t depth = 0;
  const float* b = nullptr;
  std::int64_t width = 16;  // 16 or 8
  float* c = nullptr;
  std::int64_t ldc = 0;
  // Applied at the store when non-null: bias from `channel`, residual at `c_offset` + the
  // element's offset from c (c_offset: c's own offset in the output).
  const Epilogue* epilogue = nullptr;
  std::int64_t channel = 0;
  std::int64_t c_offset = 0;
};

void multiply_panel(const Panel& p);

}  // namespace refold::native
