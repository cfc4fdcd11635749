// The calling thread's scratch memory for a native kernel's packed or transformed operands,
// grown to the largest call so far and reused: a tensor per call would leave one kept block per
// problem size in the block cache (core/block_cache.h), megabytes that serve nothing else. One
// kernel call at a time per thread (kernels do not nest); a kernel's OpenMP team either uses the
// caller's pointer or asks for its own, each thread its own buffer.
#pragma once

#include <cstddef>
#include <vector>

namespace refold::native {

inline float* thread_scratch(std::size_t floats) {
  thread_local std::vector<float> buffer;
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

}  // namespace refold::native
