// native::adaptive_avg_pool2d (adaptive_avg_pool2d.h): validation, declines, and the window sums
// for NHWC (channels vectorized) and NCHW (spans of a plane vectorized).
#include "kernels/native/adaptive_avg_pool2d.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/tail_mask.h"
#include "kernels/reference/pooling_checks.h"
#include "refold/threads.h"

namespace refold::native {
namespace {

constexpr const char* kOp = "adaptive_avg_pool2d";
namespace ref = reference::detail;

// The pixels of one output: rows [h0, h1) × columns [w0, w1).
struct Window {
  std::int64_t h0, h1, w0, w1;
  float count() const { return static_cast<float>((h1 - h0) * (w1 - w0)); }
};

Window window_of(std::int64_t oh, std::int64_t ow, std::int64_t in_h, std::int64_t in_w,
                 Size2d out) {
  const auto [h0, h1] = ref::adaptive_window(kOp, oh, in_h, out.h);
  const auto [w0, w1] = ref::adaptive_window(kOp, ow, in_w, out.w);
  return {h0, h1, w0, w1};
}

// NHWC, one block of up to 32 channels: dst[k] = Σ_window image[h][w][k] / count for
// k < lanes, image pointing at the block's first channel of pixel (0, 0); a pixel is c floats,
// a row w·c. Each window row is summed on its own (4 vectors), then added to the total.
REFOLD_TARGET_AVX2 void window_mean_nhwc(const float* image, std::int64_t c, std::int64_t row,
                                         const Window& win, std::int64_t lanes, float* dst) {
  const __m256i m0 = tail_mask(std::clamp<std::int64_t>(lanes, 0, 8));
  const __m256i m1 = tail_mask(std::clamp<std::int64_t>(lanes - 8, 0, 8));
  const __m256i m2 = tail_mask(std::clamp<std::int64_t>(lanes - 16, 0, 8));
  const __m256i m3 = tail_mask(std::clamp<std::int64_t>(lanes - 24, 0, 8));
  __m256 t0 = _mm256_setzero_ps(), t1 = t0, t2 = t0, t3 = t0;
  for (std::int64_t h = win.h0; h < win.h1; ++h) {
    const float* p = image + h * row + win.w0 * c;
    __m256 r0 = _mm256_setzero_ps(), r1 = r0, r2 = r0, r3 = r0;
    for (std::int64_t w = win.w0; w < win.w1; ++w, p += c) {
      r0 = _mm256_add_ps(r0, _mm256_maskload_ps(p, m0));
      r1 = _mm256_add_ps(r1, _mm256_maskload_ps(p + 8, m1));
      r2 = _mm256_add_ps(r2, _mm256_maskload_ps(p + 16, m2));
      r3 = _mm256_add_ps(r3, _mm256_maskload_ps(p + 24, m3));
    }
    t0 = _mm256_add_ps(t0, r0);
    t1 = _mm256_add_ps(t1, r1);
    t2 = _mm256_add_ps(t2, r2);
    t3 = _mm256_add_ps(t3, r3);
  }
  const __m256 n = _mm256_set1_ps(win.count());
  _mm256_maskstore_ps(dst, m0, _mm256_div_ps(t0, n));
  _mm256_maskstore_ps(dst + 8, m1, _mm256_div_ps(t1, n));
  _mm256_maskstore_ps(dst + 16, m2, _mm256_div_ps(t2, n));
  _mm256_maskstore_ps(dst + 24, m3, _mm256_div_ps(t3, n));
}

// Σ p[0 … n): float32 sums of chunks of at most 512 elements (4 vectors each), totalled in
// double.
REFOLD_TARGET_AVX2 double span_sum(const float* p, std::int64_t n) {
  constexpr std::int64_t kChunk = 512;
  double total = 0;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t end = std::min(n, start + kChunk);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    std::int64_t k = start;
    for (; k + 32 <= end; k += 32) {
      a0 = _mm256_add_ps(a0, _mm256_loadu_ps(p + k));
      a1 = _mm256_add_ps(a1, _mm256_loadu_ps(p + k + 8));
      a2 = _mm256_add_ps(a2, _mm256_loadu_ps(p + k + 16));
      a3 = _mm256_add_ps(a3, _mm256_loadu_ps(p + k + 24));
    }
    for (; k < end; k += 8)
      a0 = _mm256_add_ps(a0,
                         _mm256_maskload_ps(p + k, tail_mask(std::min<std::int64_t>(8, end - k))));
    const __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    const __m128 half = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    const __m128 quarter = _mm_add_ps(half, _mm_movehl_ps(half, half));
    total += _mm_cvtss_f32(_mm_add_ss(quarter, _mm_movehdup_ps(quarter)));
  }
  return total;
}

// NCHW: the mean of one window of a plane of rows of `w` floats; a window spanning whole rows
// is one contiguous span.
double window_mean_nchw(const float* plane, std::int64_t w, const Window& win) {
  double sum = 0;
  if (win.w0 == 0 && win.w1 == w)
    sum = span_sum(plane + win.h0 * w, (win.h1 - win.h0) * w);
  else
    for (std::int64_t h = win.h0; h < win.h1; ++h)
      sum += span_sum(plane + h * w + win.w0, win.w1 - win.w0);
  return sum / static_cast<double>((win.h1 - win.h0) * (win.w1 - win.w0));
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& input, Size2d output_size, std::string* declined) {
  ref::check_pool_input(input, kOp);
  if (output_size.h <= 0 || output_size.w <= 0)
    return decline(
        kOp, fmt::format("output_size ({}, {}) is not positive", output_size.h, output_size.w),
        declined);
  if (!cpu_has_avx2_fma()) return decline(kOp, "this CPU has no AVX2/FMA", declined);
  if (input.dtype() != DType::Float32)
    return decline(kOp, fmt::format("dtype {}; only float32", dtype_name(input.dtype())), declined);
  const bool four_d = input.dim() == 4;
  const MemoryFormat format = four_d ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  if (!input.is_contiguous(format))
    return decline(kOp,
                   fmt::format("input strides [{}] are not dense NCHW or NHWC",
                               fmt::join(input.strides(), ", ")),
                   declined);
  const std::int64_t n = four_d ? input.size(0) : 1, c = input.size(-3);
  const std::int64_t in_h = input.size(-2), in_w = input.size(-1);
  if (n == 0) return decline(kOp, "an empty batch", declined);
  const Size2d out = output_size;
  Tensor output = four_d ? empty({n, c, out.h, out.w}, {DType::Float32, format})
                         : empty({c, out.h, out.w}, {DType::Float32});
  const float* src = input.data<float>();
  float* dst = output.data<float>();
  const int threads = get_num_threads();
  if (format == MemoryFormat::ChannelsLast) {
    // Jobs: (image, output pixel, block of 32 channels); output pixel p holds c floats.
    constexpr std::int64_t kBlock = 32;
    const std::int64_t blocks = (c + kBlock - 1) / kBlock, pixels = out.h * out.w;
    const std::int64_t jobs = n * pixels * blocks;
#pragma omp parallel for schedule(static) num_threads(threads) if (jobs > 1)
    for (std::int64_t job = 0; job < jobs; ++job) {
      const std::int64_t b = job % blocks, p = job / blocks % pixels, image = job / blocks / pixels;
      const Window win = window_of(p / out.w, p % out.w, in_h, in_w, out);
      window_mean_nhwc(src + image * in_h * in_w * c + b * kBlock, c, in_w * c, win,
                       std::min(kBlock, c - b * kBlock),
                       dst + (image * pixels + p) * c + b * kBlock);
    }
  } else {
    // Jobs: (plane, output pixel), in output order.
    const std::int64_t pixels = out.h * out.w, jobs = n * c * pixels;
#pragma omp parallel for schedule(static) num_threads(threads) if (jobs > 1)
    for (std::int64_t job = 0; job < jobs; ++job) {
      const std::int64_t p = job % pixels, plane = job / pixels;
      const Window win = window_of(p / out.w, p % out.w, in_h, in_w, out);
      dst[job] = static_cast<float>(window_mean_nchw(src + plane * in_h * in_w, in_w, win));
    }
  }
  return output;
}

}  // namespace refold::native
