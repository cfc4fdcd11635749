#include "kernels/subnormals.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <string_view>

#include "core/check.h"
#include "kernels/onednn/threads.h"
#include "refold/subnormals.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace refold {
namespace {

// -1: not set by set_flush_denormal(): use the default.
std::atomic<int> g_flush_requested{-1};
thread_local bool t_in_flush_scope = false;

bool default_flush_denormal() {
  static const bool flush = [] {
    const char* env = std::getenv("REFOLD_FLUSH_DENORMAL");
    if (env == nullptr || *env == '\0') return true;
    const std::string_view text(env);
    REFOLD_CHECK(text == "0" || text == "1", "REFOLD_FLUSH_DENORMAL ('{}') must be 0 or 1", text);
    return text == "1";
  }();
  return flush;
}

#if defined(__x86_64__)
// MXCSR bit 15: flush to zero (a subnormal result becomes 0); bit 6: denormals are zero (a
// subnormal operand reads as 0). SSE, AVX and AVX-512 arithmetic all follow MXCSR.
constexpr unsigned kFlushBits = (1u << 15) | (1u << 6);
unsigned read_mode() { return _mm_getcsr(); }
void write_mode(unsigned mode) { _mm_setcsr(mode); }
#else
constexpr unsigned kFlushBits = 0;
unsigned read_mode() { return 0; }
void write_mode(unsigned) {}
#endif

}  // namespace

void set_flush_denormal(bool flush) {
  g_flush_requested.store(flush ? 1 : 0, std::memory_order_relaxed);
}

bool get_flush_denormal() {
  const int requested = g_flush_requested.load(std::memory_order_relaxed);
  return requested >= 0 ? requested == 1 : default_flush_denormal();
}

namespace kernels {

FlushDenormalScope::FlushDenormalScope() {
  if (kFlushBits == 0 || t_in_flush_scope || !get_flush_denormal()) return;
  const int threads = onednn::apply_num_threads();  // may throw: before anything changes
  saved_.assign(static_cast<std::size_t>(threads), 0);
  outermost_ = true;
  t_in_flush_scope = true;
  // The calling thread first, outside any parallel region: LLVM's libomp copies the forking
  // thread's MXCSR to its workers at every fork and puts the forking thread's own back at every
  // join, so only this write lasts there.
  caller_ = read_mode();
  write_mode(caller_ | kFlushBits);
  // GNU libgomp's workers keep their own MXCSR from region to region: each sets its bits.
#pragma omp parallel num_threads(threads)
  {
    const unsigned mode = read_mode();
    saved_[static_cast<std::size_t>(omp_get_thread_num())] = mode;
    write_mode(mode | kFlushBits);
  }
}

FlushDenormalScope::~FlushDenormalScope() {
  if (!outermost_) return;
  const auto restore = [](unsigned before) {
    write_mode((read_mode() & ~kFlushBits) | (before & kFlushBits));
  };
  const int threads = static_cast<int>(saved_.size());
#pragma omp parallel num_threads(threads)
  {
    // Thread 0 is the caller, put back below; a worker that did not take part in the first
    // region gets the caller's bits.
    const auto k = static_cast<std::size_t>(omp_get_thread_num());
    if (k != 0) restore(k < saved_.size() ? saved_[k] : caller_);
  }
  restore(caller_);
  t_in_flush_scope = false;
}

}  // namespace kernels
}  // namespace refold
