// native/channel_binary.h.
#include "kernels/native/channel_binary.h"

#include <algorithm>
#include <cstdint>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"
#include "kernels/native/tail_mask.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>
#include <omp.h>
#endif

namespace refold::native {

namespace {

#if REFOLD_HAVE_X86_KERNELS

template <ChannelOp Op>
REFOLD_TARGET_AVX512 inline __m512 apply(__m512 a, __m512 b) {
  return Op == ChannelOp::Mul ? _mm512_mul_ps(a, b) : _mm512_add_ps(a, b);
}

template <ChannelOp Op>
REFOLD_TARGET_AVX2 inline __m256 apply(__m256 a, __m256 b) {
  return Op == ChannelOp::Mul ? _mm256_mul_ps(a, b) : _mm256_add_ps(a, b);
}

// Pixels [p0, p1) of rows of c floats: y = x ∘ v.
template <ChannelOp Op>
REFOLD_TARGET_AVX512 void pixels_avx512(const float* x, const float* v, float* y, std::int64_t c,
                                        std::int64_t p0, std::int64_t p1) {
  const std::int64_t full = c / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (c - full)) - 1);
  for (std::int64_t p = p0; p < p1; ++p) {
    const float* xr = x + p * c;
    float* yr = y + p * c;
    for (std::int64_t k = 0; k < full; k += 16)
      _mm512_storeu_ps(yr + k, apply<Op>(_mm512_loadu_ps(xr + k), _mm512_loadu_ps(v + k)));
    if (tail != 0)
      _mm512_mask_storeu_ps(
          yr + full, tail,
          apply<Op>(_mm512_maskz_loadu_ps(tail, xr + full), _mm512_maskz_loadu_ps(tail, v + full)));
  }
}

template <ChannelOp Op>
REFOLD_TARGET_AVX2 void pixels_avx2(const float* x, const float* v, float* y, std::int64_t c,
                                    std::int64_t p0, std::int64_t p1) {
  const std::int64_t full = c / 8 * 8;
  const __m256i tail = tail_mask(c - full);
  for (std::int64_t p = p0; p < p1; ++p) {
    const float* xr = x + p * c;
    float* yr = y + p * c;
    for (std::int64_t k = 0; k < full; k += 8)
      _mm256_storeu_ps(yr + k, apply<Op>(_mm256_loadu_ps(xr + k), _mm256_loadu_ps(v + k)));
    if (full < c)
      _mm256_maskstore_ps(
          yr + full, tail,
          apply<Op>(_mm256_maskload_ps(xr + full, tail), _mm256_maskload_ps(v + full, tail)));
  }
}

template <ChannelOp Op>
void run(const float* x, const float* v, float* y, std::int64_t pixels, std::int64_t c,
         int threads) {
  const bool wide = cpu_has_avx512() && max_vector_isa() == VectorIsa::Avx512;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    // One contiguous range of pixels per thread.
    const int team = threads > 1 ? omp_get_num_threads() : 1,
              me = threads > 1 ? omp_get_thread_num() : 0;
    const std::int64_t p0 = pixels * me / team, p1 = pixels * (me + 1) / team;
    if (wide) {
      pixels_avx512<Op>(x, v, y, c, p0, p1);
    } else {
      pixels_avx2<Op>(x, v, y, c, p0, p1);
    }
  }
}

#endif

// Whether t holds one value per channel of an NCHW tensor of c channels: [1, C, 1, 1] or [C, 1, 1].
bool per_channel(const Tensor& t, std::int64_t c) {
  const Shape& s = t.sizes();
  return (s == Shape{1, c, 1, 1} || s == Shape{c, 1, 1}) && (c == 1 || t.stride(-3) == 1);
}

}  // namespace

Tensor channel_binary(ChannelOp op, const Tensor& a, const Tensor& b, std::string* declined) {
  constexpr const char* name = "channel_binary";
  if (!cpu_has_avx2_fma()) return decline(name, "needs AVX2 and FMA", declined);
  if (!a.defined() || !b.defined()) return decline(name, "an operand is undefined", declined);
  const bool a_big = a.numel() >= b.numel();  // x: the operand with the output's shape
  const Tensor& x = a_big ? a : b;
  const Tensor& v = a_big ? b : a;
  if (x.dim() != 4 || x.dtype() != DType::Float32 || v.dtype() != DType::Float32)
    return decline(name, "not a 4-d float32 tensor and a float32 one per channel", declined);
  if (!x.is_contiguous(MemoryFormat::ChannelsLast) || x.is_contiguous())
    return decline(name, "not NHWC", declined);
  const std::int64_t c = x.size(1);
  if (!per_channel(v, c)) return decline(name, "not one value per channel", declined);
  if (x.numel() == 0) return decline(name, "no elements", declined);
#if REFOLD_HAVE_X86_KERNELS
  Tensor y = empty(x.sizes(), MemoryFormat::ChannelsLast);
  const std::int64_t pixels = x.numel() / c;
  const int threads = row_kernel_threads(x.numel());
  if (op == ChannelOp::Mul) {
    run<ChannelOp::Mul>(x.data<float>(), v.data<float>(), y.data<float>(), pixels, c, threads);
  } else {
    run<ChannelOp::Add>(x.data<float>(), v.data<float>(), y.data<float>(), pixels, c, threads);
  }
  return y;
#else
  return decline(name, "built without x86 kernels", declined);
#endif
}

}  // namespace refold::native
