// What refold's own vector kernels need from the CPU, checked at run time: the target macros and
// the AVX2 check (core/cpu_features.h: the dispatch declines before calling in), the AVX-512
// checks (a CPU without AVX-512 never executes an AVX-512 instruction: vector_isa() says AVX2
// there) and the ISA the kernels run with.
#pragma once

#include <string_view>

#include "core/cpu_features.h"

namespace refold::native {

using ::refold::cpu_has_avx2_fma;

// True where this CPU (and its OS, which must save the 512-bit state) can run the AVX-512
// kernels: AVX-512 F, DQ and VL, and AVX2 + FMA.
bool cpu_has_avx512();

// True where cpu_has_avx512() and a 512-bit FMA does twice the work of a 256-bit one in the
// same time (cores with two 512-bit FMA units, as Intel's server cores have), not the same work
// in twice the time (cores that split a 512-bit op into two 256-bit halves, as Zen 4 does).
// Measured once per process, on first use, by timing equal counts of 256- and 512-bit FMAs (best
// of 5 alternating runs of 12 independent chains, about 0.2 ms in all).
bool cpu_has_full_rate_avx512();

// The vector ISA refold's own kernels run with and are tuned for: the conv micro-kernel's form
// (micro_kernel.h) and the rules that decide where its conv kernels beat oneDNN's
// (winograd_conv2d.cpp, direct_conv2d.cpp).
//   Avx512  where cpu_has_full_rate_avx512(). oneDNN's AVX-512 convs run about twice as fast as
//           its AVX2 ones there, so refold's conv kernels pay off in fewer places.
//   Avx2    everywhere else, AVX-512 at half rate included: there refold's AVX-512 form is no
//           faster than its AVX2 one, and Winograd keeps the AVX2 rules (oneDNN's AVX-512
//           convs still beat the direct conv there: onednn_has_avx512_convs()).
enum class VectorIsa { Avx2, Avx512 };

// This CPU's ISA, capped by set_max_vector_isa, else by the environment variable
// REFOLD_NATIVE_ISA ("avx2" or "avx512", read once; anything else throws refold::Error). Only
// meaningful where cpu_has_avx2_fma().
VectorIsa vector_isa();
// Caps vector_isa() for this process from now on (tests run both forms and both sets of rules;
// benchmarks compare them). A cap above what the CPU has changes nothing.
void set_max_vector_isa(VectorIsa isa);
// The cap in force: set_max_vector_isa's, else REFOLD_NATIVE_ISA's, else Avx512.
VectorIsa max_vector_isa();

// True where cpu_has_avx512() and the cap (max_vector_isa) is Avx512: oneDNN then runs its
// AVX-512 convs (brgconv:avx512_core), at full or half rate. A rule that compares refold's
// kernels with those keys on this, not on vector_isa(): the native direct conv loses to them on
// Zen 4 too (docs/native-kernels.md).
bool onednn_has_avx512_convs();

std::string_view vector_isa_name(VectorIsa isa);  // "avx2", "avx512"
// "avx2" / "avx512" → the ISA; anything else throws refold::Error naming the text.
VectorIsa parse_vector_isa(std::string_view text);

}  // namespace refold::native
