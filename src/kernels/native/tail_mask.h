// The lane mask of a partial AVX2 vector: the first n of 8 float lanes (0 ≤ n ≤ 8), for
// _mm256_maskload_ps / _mm256_maskstore_ps on a row's last elements, which never touch memory
// past the row.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/native/cpu.h"

namespace refold::native {

REFOLD_TARGET_AVX2 inline __m256i tail_mask(std::int64_t n) {
  // Lanes [8 − n, 16 − n) of {−1 × 8, 0 × 8}: n all-ones lanes, then zeros.
  alignas(32) static constexpr std::int32_t kLanes[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                          0,  0,  0,  0,  0,  0,  0,  0};
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLanes + 8 - n));
}

}  // namespace refold::native
