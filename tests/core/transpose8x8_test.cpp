// core/transpose8x8.h: one 8 × 8 block of 4-byte elements between rows of any strides, bit for
// bit (NaN payloads and int32 values included), leaving everything around the block untouched.
#include "core/transpose8x8.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace refold {
namespace {

TEST(Transpose8x8, MovesEveryElementToItsTransposedPlaceBitForBit) {
#if REFOLD_HAVE_X86_KERNELS
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2";
  const std::int64_t s_stride = 11, d_stride = 13;
  std::vector<std::uint32_t> src(8 * s_stride), dst(8 * d_stride, 0xdeadbeef);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = 0x7fc00000u + static_cast<std::uint32_t>(i);
  detail::transpose8x8(src.data(), s_stride, dst.data(), d_stride);
  for (std::int64_t r = 0; r < 8; ++r)
    for (std::int64_t c = 0; c < d_stride; ++c)
      EXPECT_EQ(dst[r * d_stride + c], c < 8 ? src[c * s_stride + r] : 0xdeadbeef)
          << "row " << r << " column " << c;
#else
  GTEST_SKIP() << "x86 only";
#endif
}

}  // namespace
}  // namespace refold
