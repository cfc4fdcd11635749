// REFOLD_VERBOSE=1: which implementation ran each op, and why the others declined.
// The environment variable is read once, on first use; every line goes to stderr whole (one
// write under a lock), so lines from concurrent calls do not interleave.
//   refold: conv2d -> onednn (reference not tried)
//   refold: conv2d -> reference (onednn declined: bfloat16 needs avx512_bf16)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace refold {

// True when REFOLD_VERBOSE is set to anything but "" or "0".
bool verbose();

// "refold: <op> -> <impl>" plus " (<reason>)" when a reason is given. Prints only if verbose().
void log_dispatch(std::string_view op, std::string_view impl, std::string_view reason = {});

// How many choices this thread has dispatched so far (log_dispatch calls, verbose or not): the
// executor compares it around a node to tell whether the node's op dispatched at all.
std::uint64_t dispatch_count();

// "refold: <message>". Prints only if verbose().
void log_verbose(std::string_view message);

// What the implementation about to be reported by this thread's next log_dispatch() is exactly
// (oneDNN's implementation name, e.g. "brg:avx2"; Winograd's tile, "F(4x4,3x3)"): the line then
// reads "onednn brg:avx2". Note it only once the implementation has taken the problem.
void note_dispatch_detail(std::string_view detail);

// While one exists, every dispatch choice its thread makes is also recorded in it, verbose or
// not, as "<op>: <impl>" — the profiler's "which implementation ran" (refold/graph/profile.h).
// Logs nest; the innermost records.
class DispatchLog {
 public:
  DispatchLog();
  ~DispatchLog();
  DispatchLog(const DispatchLog&) = delete;
  DispatchLog& operator=(const DispatchLog&) = delete;
  // The choices recorded since the last take(), oldest first.
  std::vector<std::string> take();
  void record(std::string entry) { entries_.push_back(std::move(entry)); }

 private:
  std::vector<std::string> entries_;
  DispatchLog* previous_;
};

}  // namespace refold
