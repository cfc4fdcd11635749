// How many threads a native row kernel (normalizations, reductions, softmax) runs on: refold's
// setting, or 1 for a small tensor, where waking a second thread costs more than it saves
// (a parallel region's fork and barrier are microseconds when the cores are free, a scheduler
// time slice when they are not: MobileViTv2's small attention sums and softmaxes took ≈ 8 ms
// each on 2 threads of a loaded machine, bench/RESULTS.md).
#pragma once

#include <cstdint>

#include "kernels/onednn/threads.h"

namespace refold::native {

// Below this many elements a row kernel stays on the calling thread (256 KiB of float32).
inline constexpr std::int64_t kParallelElements = std::int64_t{1} << 16;

inline int row_kernel_threads(std::int64_t elements) {
  const int threads = onednn::apply_num_threads();
  return elements < kParallelElements ? 1 : threads;
}

}  // namespace refold::native
