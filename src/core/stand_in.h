// Stand-in runs. The optimizer's static shape inference (passes/known_values.h) runs nodes on
// zeros of their inputs' shapes only to learn their outputs' shapes and element types. While a
// StandInRun lives on a thread:
//   - functional::conv2d and functional::linear validate their calls as always (an invalid conv
//     still throws, naming its problem) and return zeros of the output's shape, type and memory
//     format without computing them (the reference linear took 64 s of Swin-T's load);
//   - a batched MatMul gives zeros of its output's shape too, without oneDNN's matmul;
//   - every other dispatched op runs refold's own kernels or its reference (kernels/dispatch.h),
//     never oneDNN's: they validate as oneDNN's do and build nothing that outlives the call;
//   - the storages it allocates are never kept for reuse (core/block_cache.h);
//   - kernels run on the calling thread alone: a parallel region's fork and barrier cost more
//     than the work on zeros whose values nobody reads, and a scheduler time slice each where
//     the other cores are busy (Swin-T's load spent half its time in OpenMP's wait loop).
// Otherwise the conv's compute, and for every op the oneDNN primitive it would JIT-compile,
// its scratchpad and a conv's packed weight, would be spent on zeros for a graph the optimizer
// is about to rewrite, and the primitives and weights would stay in the process-wide caches:
// MobileOne-S0's 284 stand-in primitives held 65 MB (bench/RESULTS.md). Scopes nest.
#pragma once

#include "refold/threads.h"

namespace refold {

class StandInRun {
 public:
  StandInRun() : outer_(active_) { active_ = true; }
  ~StandInRun() { active_ = outer_; }
  StandInRun(const StandInRun&) = delete;
  StandInRun& operator=(const StandInRun&) = delete;

  // True while a StandInRun lives on this thread.
  static bool active() { return active_; }

 private:
  static inline thread_local bool active_ = false;
  bool outer_;
  ThreadCountScope one_thread_{1};
};

}  // namespace refold
