#include "kernels/onednn/threads.h"

#include <omp.h>
#include <sched.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "core/check.h"
#include "refold/threads.h"

namespace refold {
namespace {

// 0 = not set by set_num_threads(): use the default.
std::atomic<int> g_requested{0};
// 0 = no ThreadCountScope on this thread.
thread_local int t_scoped = 0;

// Reads one integer from a sysfs file; -1 if it cannot.
long read_sysfs_int(const std::string& path) {
  std::ifstream in(path);
  long value = -1;
  if (!(in >> value)) return -1;
  return value;
}

// REFOLD_NUM_THREADS if set (validated), else the physical cores. A throwing initializer of a
// function-local static is retried on the next call, so a bad value errors on every call.
int default_num_threads() {
  static const int n = [] {
    const char* env = std::getenv("REFOLD_NUM_THREADS");
    if (env == nullptr || *env == '\0') return onednn::physical_core_count();
    return onednn::parse_num_threads(env);
  }();
  return n;
}

}  // namespace

void set_num_threads(int n) {
  REFOLD_CHECK(n >= 1, "set_num_threads: n ({}) must be >= 1", n);
  g_requested.store(n, std::memory_order_relaxed);
}

int get_num_threads() {
  if (t_scoped > 0) return t_scoped;
  const int requested = g_requested.load(std::memory_order_relaxed);
  return requested > 0 ? requested : default_num_threads();
}

ThreadCountScope::ThreadCountScope(int n) : previous_(t_scoped) {
  REFOLD_CHECK(n >= 0, "ThreadCountScope: n ({}) must be >= 0 (0: the process-wide setting)", n);
  if (n > 0) t_scoped = n;
}

ThreadCountScope::~ThreadCountScope() { t_scoped = previous_; }

namespace onednn {

int apply_num_threads() {
  const int n = get_num_threads();
  if (omp_get_max_threads() != n) omp_set_num_threads(n);
  return n;
}

int parse_num_threads(std::string_view text) {
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  REFOLD_CHECK(ec == std::errc() && end == text.data() + text.size() && value >= 1,
               "REFOLD_NUM_THREADS ('{}') must be a positive integer", text);
  return value;
}

int physical_core_count() {
  static const int n = [] {
    const unsigned logical = std::thread::hardware_concurrency();
    const int fallback = logical > 0 ? static_cast<int>(logical) : 1;
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0) return fallback;
    std::set<std::pair<long, long>> cores;  // (package, core) pairs
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (!CPU_ISSET(cpu, &mask)) continue;
      const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(cpu) + "/topology/";
      const long package = read_sysfs_int(dir + "physical_package_id");
      const long core = read_sysfs_int(dir + "core_id");
      if (package < 0 || core < 0) return fallback;  // no topology: trust the logical count
      cores.emplace(package, core);
    }
    return cores.empty() ? fallback : static_cast<int>(cores.size());
  }();
  return n;
}

}  // namespace onednn
}  // namespace refold
