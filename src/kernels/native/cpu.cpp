// cpu.h: which vector ISA refold's own kernels run with.
#include "kernels/native/cpu.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>

#include "core/check.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>
#endif

namespace refold::native {

namespace {

// -1: not set by set_max_vector_isa, so the environment (or Avx512) decides.
std::atomic<int> g_cap{-1};

// REFOLD_NATIVE_ISA if set (validated), else Avx512. A throwing initializer of a function-local
// static is retried on the next call, so a bad value errors on every call.
VectorIsa environment_cap() {
  static const VectorIsa cap = [] {
    const char* env = std::getenv("REFOLD_NATIVE_ISA");
    if (env == nullptr || *env == '\0') return VectorIsa::Avx512;
    return parse_vector_isa(env);
  }();
  return cap;
}

#if REFOLD_HAVE_X86_KERNELS

constexpr int kProbeSteps = 4000;  // per chain; 12 chains: 48,000 FMAs per run

// Seconds for 12 independent chains of kProbeSteps FMAs of vector type V (enough chains to fill
// two FMA units of latency 4–5). `seed` comes from outside so the loop cannot be folded, and
// each chain starts from its own value: chains from one value are one chain to the compiler,
// which then times the FMA's latency, equal for both widths, instead of its throughput.
#define REFOLD_FMA_PROBE(V, SET1, FMA, ADD, TO_FLOAT)                                       \
  const V m = SET1(0.999f), a = SET1(1e-3f);                                                \
  V c0 = SET1(seed), c1 = SET1(seed + 1), c2 = SET1(seed + 2), c3 = SET1(seed + 3);         \
  V c4 = SET1(seed + 4), c5 = SET1(seed + 5), c6 = SET1(seed + 6), c7 = SET1(seed + 7);     \
  V c8 = SET1(seed + 8), c9 = SET1(seed + 9), c10 = SET1(seed + 10), c11 = SET1(seed + 11); \
  const auto start = std::chrono::steady_clock::now();                                      \
  for (int i = 0; i < kProbeSteps; ++i) {                                                   \
    c0 = FMA(c0, m, a), c1 = FMA(c1, m, a), c2 = FMA(c2, m, a), c3 = FMA(c3, m, a);         \
    c4 = FMA(c4, m, a), c5 = FMA(c5, m, a), c6 = FMA(c6, m, a), c7 = FMA(c7, m, a);         \
    c8 = FMA(c8, m, a), c9 = FMA(c9, m, a), c10 = FMA(c10, m, a), c11 = FMA(c11, m, a);     \
  }                                                                                         \
  const double seconds =                                                                    \
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();      \
  const V sum = ADD(ADD(ADD(ADD(c0, c1), ADD(c2, c3)), ADD(ADD(c4, c5), ADD(c6, c7))),      \
                    ADD(ADD(c8, c9), ADD(c10, c11)));                                       \
  sink = TO_FLOAT(sum);                                                                     \
  return seconds

REFOLD_TARGET_AVX2 double fma256_seconds(float seed, volatile float& sink) {
  REFOLD_FMA_PROBE(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32);
}

REFOLD_TARGET_AVX512 double fma512_seconds(float seed, volatile float& sink) {
  REFOLD_FMA_PROBE(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, _mm512_cvtss_f32);
}

#undef REFOLD_FMA_PROBE

#endif

}  // namespace

bool cpu_has_full_rate_avx512() {
#if REFOLD_HAVE_X86_KERNELS
  static const bool full = [] {
    if (!cpu_has_avx512()) return false;
    volatile float sink = 0.0f, source = 1.0f;  // the start value and the result: opaque
    const float seed = source;
    // The first 512-bit instructions after a pause run slowed while the core powers its upper
    // lanes (the license warm-up, tens of microseconds): timed cold, a full-rate Xeon's ratio
    // was 1.0–1.41, and now and then above the cut, so the kernels chosen changed from process
    // to process (HRNet's 3×3 convs on Winograd or brgconv). Warmed for 1 ms first: 1.10–1.12.
    for (double warm = 0; warm < 1e-3;) warm += fma512_seconds(seed, sink);
    double t256 = 1e9, t512 = 1e9;
    for (int run = 0; run < 5; ++run) {
      t256 = std::min(t256, fma256_seconds(seed, sink));
      t512 = std::min(t512, fma512_seconds(seed, sink));
    }
    // Full rate: about equal times (1×); half rate: about twice (2×). The cut is in between.
    return t512 < 1.5 * t256;
  }();
  return full;
#else
  return false;
#endif
}

bool cpu_has_avx512() {
#if REFOLD_HAVE_X86_KERNELS
  // __builtin_cpu_supports reports AVX-512 only where the OS enables its register state (XCR0).
  static const bool has = cpu_has_avx2_fma() && __builtin_cpu_supports("avx512f") &&
                          __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  return has;
#else
  return false;
#endif
}

VectorIsa max_vector_isa() {
  const int cap = g_cap.load(std::memory_order_relaxed);
  return cap >= 0 ? static_cast<VectorIsa>(cap) : environment_cap();
}

void set_max_vector_isa(VectorIsa isa) {
  g_cap.store(static_cast<int>(isa), std::memory_order_relaxed);
}

VectorIsa vector_isa() {
  return cpu_has_full_rate_avx512() && max_vector_isa() == VectorIsa::Avx512 ? VectorIsa::Avx512
                                                                             : VectorIsa::Avx2;
}

bool onednn_has_avx512_convs() { return cpu_has_avx512() && max_vector_isa() == VectorIsa::Avx512; }

std::string_view vector_isa_name(VectorIsa isa) {
  return isa == VectorIsa::Avx512 ? "avx512" : "avx2";
}

VectorIsa parse_vector_isa(std::string_view text) {
  if (text == "avx2") return VectorIsa::Avx2;
  if (text == "avx512") return VectorIsa::Avx512;
  fail("vector ISA '{}' is not one of: avx2, avx512 (REFOLD_NATIVE_ISA)", text);
}

}  // namespace refold::native
