// The scope a model run holds so that its kernels flush subnormals (refold/subnormals.h).
#pragma once

#include <vector>

namespace refold::kernels {

// While it lives, the calling thread and the OpenMP team of get_num_threads() threads that the
// kernels use have MXCSR's flush-to-zero and denormals-are-zero bits set, if get_flush_denormal()
// says so; a scope inside another on the same thread does nothing. The destructor restores the
// two bits each thread had. Costs two OpenMP parallel regions (about a microsecond each).
class FlushDenormalScope {
 public:
  FlushDenormalScope();
  ~FlushDenormalScope();
  FlushDenormalScope(const FlushDenormalScope&) = delete;
  FlushDenormalScope& operator=(const FlushDenormalScope&) = delete;

 private:
  bool outermost_ = false;
  std::vector<unsigned> saved_;  // each team thread's MXCSR before the scope
};

}  // namespace refold::kernels
