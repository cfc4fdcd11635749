// What refold's own vector kernels need from the CPU, checked at run time: the library is built
// for baseline x86-64, and each AVX2 function carries its own target attribute, so a CPU without
// AVX2 never executes an AVX2 instruction (the dispatch declines before calling in).
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define REFOLD_HAVE_X86_KERNELS 1
// On every function that uses AVX2/FMA intrinsics (and on the helpers they inline).
#define REFOLD_TARGET_AVX2 __attribute__((target("avx2,fma")))
#else
#define REFOLD_HAVE_X86_KERNELS 0
#define REFOLD_TARGET_AVX2
#endif

namespace refold::native {

// True where this CPU (and build) can run the AVX2 + FMA kernels.
inline bool cpu_has_avx2_fma() {
#if REFOLD_HAVE_X86_KERNELS
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

}  // namespace refold::native
