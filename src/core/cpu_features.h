// The CPU features refold's vector code is compiled for and checked against at run time: the
// library is built for baseline x86-64, and each AVX2 or AVX-512 function carries its own target
// attribute, so a CPU without AVX2 never executes an AVX2 instruction (its callers check
// cpu_has_avx2_fma() first), and one without AVX-512 never executes an AVX-512 one. The core's
// copies (transpose8x8.h) and the native kernels (kernels/native/cpu.h, which adds the AVX-512
// checks and the ISA setting) share these.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define REFOLD_HAVE_X86_KERNELS 1
// On every function that uses AVX2/FMA intrinsics (and on the helpers they inline).
#define REFOLD_TARGET_AVX2 __attribute__((target("avx2,fma")))
// On every function that uses AVX-512 intrinsics: F (the 512-bit registers and FMA), DQ
// (extracting a 256-bit half), VL; AVX2 helpers inline into them.
#define REFOLD_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#else
#define REFOLD_HAVE_X86_KERNELS 0
#define REFOLD_TARGET_AVX2
#define REFOLD_TARGET_AVX512
#endif

namespace refold {

// True where this CPU (and build) can run the AVX2 + FMA code.
inline bool cpu_has_avx2_fma() {
#if REFOLD_HAVE_X86_KERNELS
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}

}  // namespace refold
