// Stand-in runs. The optimizer's static shape inference (passes/known_values.h) runs nodes on
// zeros of their inputs' shapes only to learn their outputs' shapes and element types. While a
// StandInRun lives on a thread:
//   - functional::conv2d and functional::linear validate their calls as always (an invalid conv
//     still throws, naming its problem) and return zeros of the output's shape, type and memory
//     format without computing them (the reference linear took 64 s of Swin-T's load);
//   - every other dispatched op runs its reference (kernels/dispatch.h), which validates as the
//     fast implementations do and builds nothing that outlives the call;
//   - the storages it allocates are never kept for reuse (core/block_cache.h).
// Otherwise the conv's compute, and for every op the oneDNN primitive it would JIT-compile,
// its scratchpad and a conv's packed weight, would be spent on zeros for a graph the optimizer
// is about to rewrite, and the primitives and weights would stay in the process-wide caches:
// MobileOne-S0's 284 stand-in primitives held 65 MB (bench/RESULTS.md). Scopes nest.
#pragma once

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
};

}  // namespace refold
