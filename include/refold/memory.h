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
//
// A memory limit (docs/reliability.md G1) bounds current_bytes: an allocation that would take it
// above the limit throws refold::Error before any memory is taken, naming the request, what is
// live and the limit:
//   would allocate 4.0 GiB (float32[1, 3, 40000, 9000]) with 1.2 MiB live > memory limit 2.0 GiB
// Run under a graph, the error also names the node that asked (Graph::run adds "Resize 'up': ").
// The check is not made at plan time: refold has no static shape inference for every op, so it
// happens at each allocation instead — still before the allocation, so a model that would need
// too much (Resize ×1000, a huge Expand or batch) fails cleanly instead of being killed by the
// OS. The refold CLI sets the limit from --max-memory (default 8 GiB); for
// library users it is 0, no limit, unless they set one.
//
//   refold::set_memory_limit(std::size_t{2} << 30);
//   try { g->run(inputs); } catch (const refold::Error& e) { /* "... > memory limit 2.0 GiB" */ }
#pragma once

#include <cstddef>

namespace refold {

struct MemoryStats {
  std::size_t current_bytes = 0;  // storage bytes alive now (as requested, before alignment)
  std::size_t peak_bytes = 0;     // the most current_bytes has been since reset_peak_memory()
  // Weight bytes a Session holds only in a kernel's packed copy (refold/session.h, "Weights
  // held once"): freed, not in current_bytes, rebuilt when read.
  std::size_t held_bytes = 0;
};

MemoryStats memory_stats();

// Sets peak_bytes to current_bytes.
void reset_peak_memory();

// The most live tensor bytes allowed at once; 0 (the default) means no limit. Lowering it below
// current_bytes frees nothing: only later allocations are refused.
void set_memory_limit(std::size_t bytes);
std::size_t memory_limit();

}  // namespace refold
