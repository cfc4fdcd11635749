// Internal side of refold/threads.h: oneDNN here runs on OpenMP, whose team size is a
// per-thread setting (the nthreads-var ICV), so each calling thread is brought in line with the
// process-wide setting right before it creates or runs a primitive.
#pragma once

#include <string_view>

namespace refold::onednn {

// Makes the calling thread's OpenMP team size equal get_num_threads(); returns that number.
int apply_num_threads();

// Physical cores in this process's CPU affinity mask (distinct (package, core) pairs from
// /sys/devices/system/cpu/cpu*/topology); falls back to std::thread::hardware_concurrency().
int physical_core_count();

// The value of REFOLD_NUM_THREADS: a positive decimal integer, nothing else; else refold::Error
//   REFOLD_NUM_THREADS ('two') must be a positive integer
int parse_num_threads(std::string_view text);

}  // namespace refold::onednn
