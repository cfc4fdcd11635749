// Live tensor memory: the bytes of every tensor storage now allocated, and the most there has
// been at once since the last reset. Counts what refold's tensors hold (activations, weights,
// buffers), not oneDNN's own scratchpads or packed-weight caches.
//
//   refold::reset_peak_memory();
//   const std::size_t before = refold::memory_stats().current_bytes;   // weights, input
//   Tensor y = (*model)(x);
//   const std::size_t activations = refold::memory_stats().peak_bytes - before;
//
// Process-wide and thread-safe (atomic counters): with several threads running models at once,
// the figures are the sum of all of them.
#pragma once

#include <cstddef>

namespace refold {

struct MemoryStats {
  std::size_t current_bytes = 0;  // storage bytes alive now (as requested, before alignment)
  std::size_t peak_bytes = 0;     // the most current_bytes has been since reset_peak_memory()
};

MemoryStats memory_stats();

// Sets peak_bytes to current_bytes.
void reset_peak_memory();

}  // namespace refold
