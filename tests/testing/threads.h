// Puts back the process-wide thread count (set_num_threads) that was in force when it was made:
// a test fixture holds one, so whatever a test sets does not leak into the next.
#pragma once

#include "refold/threads.h"

namespace refold::testing {

class RestoreNumThreads {
 public:
  RestoreNumThreads() : saved_(get_num_threads()) {}
  ~RestoreNumThreads() { set_num_threads(saved_); }
  RestoreNumThreads(const RestoreNumThreads&) = delete;
  RestoreNumThreads& operator=(const RestoreNumThreads&) = delete;

 private:
  int saved_;
};

}  // namespace refold::testing
