// How large a copy must be before a second thread pays, for every copy refold makes: the native
// copy kernels (concat, split, pad: kernels/native/row_threads.h) and Tensor::copy_.
#pragma once

#include <cstdint>

namespace refold {

// A copy of 2¹⁴ to 2¹⁶ elements did not gain from a second thread (ShuffleNetV2-1.0's channel
// concats: 0.976× the time with them on one thread, bench/compare_builds.py), so copies stay on
// one below 2¹⁶ (256 KiB of float32).
inline constexpr std::int64_t kParallelCopyElements = std::int64_t{1} << 16;

}  // namespace refold
