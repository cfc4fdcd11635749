// How many threads refold's kernels use.
//
// The default is the number of physical cores this process may run on (hyper-threads share
// one core's FMA units, so a second thread per core only adds contention to conv kernels),
// unless the environment variable REFOLD_NUM_THREADS (read once, on first use) says otherwise.
// The setting is process-wide: it applies to every kernel call made after it, from any thread,
// except where a ThreadCountScope on the calling thread says otherwise.
#pragma once

namespace refold {

// n must be >= 1.
void set_num_threads(int n);
// The current setting (see above). Throws refold::Error if REFOLD_NUM_THREADS is set but is not
// a positive integer.
int get_num_threads();

// For its lifetime, the kernel calls this thread makes use `n` threads, whatever
// set_num_threads() says (0: keep the process-wide setting). Scopes nest; each restores what
// was in force before it. refold::Session runs each call with its own thread count this way,
// so sessions with different counts can run side by side.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int n);
  ~ThreadCountScope();
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

 private:
  int previous_;
};

}  // namespace refold
