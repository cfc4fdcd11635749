// How many threads a native row kernel (normalizations, reductions, softmax) runs on: refold's
// setting, or 1 for a small tensor, where waking a second thread costs more than it saves
// (a parallel region's fork and barrier are microseconds when the cores are free, a scheduler
// time slice when they are not: MobileViTv2's small attention sums and softmaxes took ≈ 8 ms
// each on 2 threads of a loaded machine, bench/RESULTS.md).
#pragma once

#include <cstdint>

#include "core/parallel_copy.h"
#include "kernels/onednn/threads.h"

namespace refold::native {

// Below this many elements a row kernel stays on the calling thread (64 KiB of float32). At
// 2¹⁶ a vision transformer's token tensors (197 × 192, 196 × 128) ran their LayerNorms,
// softmaxes and small binaries on one thread; at 2¹⁴, in whole models against 2¹⁶
// (bench/compare_builds.py, Xeon, 2 threads): DeiT-Tiny 0.949×, TinyViT-5M 0.954×, MobileViTv2
// 0.919×, XCiT-Nano 0.971×, LeViT-128S 0.972×, MobileNetV3-Small 0.975×, none slower, and
// MobileViTv2 0.980× with a busy loop on the other core; 2¹² gained nothing more.
inline constexpr std::int64_t kParallelElements = std::int64_t{1} << 14;

// refold's setting from `parallel_from` elements on, else 1.
inline int threads_from(std::int64_t elements, std::int64_t parallel_from) {
  const int threads = onednn::apply_num_threads();
  return elements < parallel_from ? 1 : threads;
}

inline int row_kernel_threads(std::int64_t elements) {
  return threads_from(elements, kParallelElements);
}

// The same for a kernel that only copies (concat, split, pad): from kParallelCopyElements on
// (core/parallel_copy.h).
inline int copy_kernel_threads(std::int64_t elements) {
  return threads_from(elements, kParallelCopyElements);
}

}  // namespace refold::native
