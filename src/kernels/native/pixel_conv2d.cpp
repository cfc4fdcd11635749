// native/pixel_conv2d.h.
#include "kernels/native/pixel_conv2d.h"

#include <algorithm>

#include "kernels/native/conv_rules.h"
#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "refold/conv_algorithm.h"
#include "refold/threads.h"

namespace refold::native {
namespace {

std::string decline_reason(const Conv2dCall& call) {
  const reference::detail::Conv2dGeometry& g = call.geometry;
  if (get_conv_algorithm() == ConvAlgorithm::Direct) return "conv algorithm is 'direct'";
  if (!cpu_has_avx2_fma()) return "needs AVX2 and FMA";
  if (call.input.dtype() != DType::Float32 || call.weight.dtype() != DType::Float32 ||
      (call.bias.defined() && call.bias.dtype() != DType::Float32))
    return "float32 only";
  if (g.in_h != 1 || g.in_w != 1 || g.out_h != 1 || g.out_w != 1 || g.kh != 1 || g.kw != 1)
    return "not a 1×1 conv of one pixel";
  if (g.groups != 1) return "groups 1 only";
  if (g.batch == 0 || g.in_channels == 0 || g.out_channels == 0) return "empty";
  // One pixel: NCHW and NHWC are the same memory when the samples are dense.
  if (call.input.stride(1) != 1 || (g.batch > 1 && call.input.stride(0) != g.in_channels))
    return "input channels not contiguous";
  if (call.weight.stride(1) != 1) return "weight's input channels not contiguous";
  const Tensor& r = call.post.residual;
  if (r.defined() && (r.stride(1) != 1 || (g.batch > 1 && r.stride(0) != g.out_channels)))
    return "residual channels not contiguous";
  return {};
}

#if REFOLD_HAVE_X86_KERNELS

// y[j] = Σ_c w[j·w_row + c]·x[c] for the 8 rows j < 8 of `w`: eight independent FMA chains (a
// single chain waits on each FMA's latency: 1152 channels took 4× as long), reduced to one
// vector of the eight sums by horizontal adds. The last partial vector of channels is masked.
// x·w_j into a_j for the 8 rows j, one vector of channels (masked for the last, partial one).
template <bool Masked>
REFOLD_TARGET_AVX2 inline void dot8_step(const float* w, std::int64_t w_row, const float* x,
                                         __m256i mask, __m256 (&a)[8]) {
  auto load = [&](const float* p) REFOLD_TARGET_AVX2 {
    return Masked ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
  };
  const __m256 xv = load(x);
  for (int j = 0; j < 8; ++j) a[j] = _mm256_fmadd_ps(load(w + j * w_row), xv, a[j]);
}

REFOLD_TARGET_AVX2 __m256 dot8(const float* w, std::int64_t w_row, const float* x,
                               std::int64_t count) {
  __m256 a[8];
  for (__m256& v : a) v = _mm256_setzero_ps();
  std::int64_t c = 0;
  for (; c + 8 <= count; c += 8) dot8_step<false>(w + c, w_row, x + c, __m256i{}, a);
  if (c < count) dot8_step<true>(w + c, w_row, x + c, tail_mask(count - c), a);
  const __m256 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], a4 = a[4], a5 = a[5], a6 = a[6],
               a7 = a[7];
  // hadd(a, b) = [a01 a23 b01 b23 | a45 a67 b45 b67]: two rounds leave row j's two halves at
  // lane j of the low and the high 128 bits of one of two vectors.
  const __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  const __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(a4, a5), _mm256_hadd_ps(a6, a7));
  return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20),
                       _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

// Outputs [o0, o0 + 8) of sample n (fewer at the end: the missing rows repeat the last one and
// are not stored), then the epilogue over them.
REFOLD_TARGET_AVX2 void block(const float* x, const float* w, std::int64_t w_row, float* y,
                              std::int64_t n, std::int64_t o0, std::int64_t in, std::int64_t out,
                              const Epilogue& e) {
  const std::int64_t rows = std::min<std::int64_t>(8, out - o0);
  float* yn = y + n * out;
  if (rows == 8) {
    _mm256_storeu_ps(yn + o0, dot8(w + o0 * w_row, w_row, x + n * in, in));
  } else {
    alignas(32) float sums[8];
    // Rows past the last repeat it: row stride 0 from there would need a gather, so the block
    // starts 8 − rows rows early instead when it can (out ≥ 8), else repeats by a zero stride.
    if (out >= 8) {
      _mm256_store_ps(sums, dot8(w + (out - 8) * w_row, w_row, x + n * in, in));
      std::copy(sums + 8 - rows, sums + 8, yn + o0);
    } else {
      for (std::int64_t r = 0; r < rows; ++r) {
        _mm256_store_ps(sums, dot8(w + (o0 + r) * w_row, 0, x + n * in, in));
        yn[o0 + r] = sums[0];
      }
    }
  }
  finish_run(yn + o0, rows, e, o0, n * out + o0);  // bias, residual, activation, steps
}

// Output blocks of 8 over the samples, split across refold's threads when there are at least
// kParallelPixelConvMacs multiply-adds.
void run(const float* x, const float* w, std::int64_t w_row, float* y, std::int64_t batch,
         std::int64_t in, std::int64_t out, const Epilogue& e) {
  const std::int64_t blocks = (out + 7) / 8, jobs = batch * blocks;
  const bool parallel = batch * in * out >= kParallelPixelConvMacs;
#pragma omp parallel for schedule(static) num_threads(get_num_threads()) if (parallel)
  for (std::int64_t j = 0; j < jobs; ++j)
    block(x, w, w_row, y, j / blocks, j % blocks * 8, in, out, e);
}

#endif

}  // namespace

Tensor pixel_conv2d(const Conv2dCall& call, std::string* declined) {
  constexpr const char* op = "conv2d: pixel conv";
  if (std::string why = decline_reason(call); !why.empty())
    return decline(op, std::move(why), declined);
#if REFOLD_HAVE_X86_KERNELS
  const reference::detail::Conv2dGeometry& g = call.geometry;
  const ConvEpilogue epilogue(call.bias, g.out_channels, call.post);
  Tensor y =
      empty({g.batch, g.out_channels, 1, 1},
            {DType::Float32, reference::detail::conv_output_format(call.input, call.weight)});
  run(call.input.data<float>(), call.weight.data<float>(), call.weight.stride(0), y.data<float>(),
      g.batch, g.in_channels, g.out_channels, epilogue.get());
  return y;
#else
  return decline(op, "built without x86 kernels", declined);
#endif
}

}  // namespace refold::native
