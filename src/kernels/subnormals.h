// The scope a model run holds so that its kernels flush subnormals (refold/subnormals.h).
#pragma once

#include <vector>

namespace refold::kernels {

// While it lives, the calling thread and the OpenMP team of get_num_threads() threads that the
// kernels use have MXCSR's flush-to-zero and denormals-are-zero bits set, if get_flush_denormal()
// says so; a scope inside another on the same thread does nothing. The destructor restores the
// two bits each thread had. Costs two OpenMP parallel regions, ≈ 0.7 µs a run (docs/threads.md).
// Both OpenMP runtimes are covered: GNU libgomp's workers keep their own MXCSR (each is set in a
// region), LLVM libomp's take the forking thread's at each fork (the caller's is set outside).
// A process with both (a clang build of refold beside Debian's oneDNN, which uses libgomp) flushes
// on the threads of the runtime refold itself is built with, and on the calling thread.
class FlushDenormalScope {
 public:
  FlushDenormalScope();
  ~FlushDenormalScope();
  FlushDenormalScope(const FlushDenormalScope&) = delete;
  FlushDenormalScope& operator=(const FlushDenormalScope&) = delete;

 private:
  bool outermost_ = false;
  unsigned caller_ = 0;          // the calling thread's MXCSR before the scope
  std::vector<unsigned> saved_;  // each team thread's MXCSR before the scope (GNU libgomp)
};

}  // namespace refold::kernels
