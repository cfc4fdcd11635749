// native::adaptive_avg_pool2d (adaptive_pool2d.h): validation,
// declines, and one window reduction (a sum) for NHWC (channels vectorized) and NCHW (spans
// of a plane vectorized).
#include "kernels/native/adaptive_pool2d.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/native/bfloat16_boundary.h"
#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/tail_mask.h"
#include "kernels/reference/pooling_checks.h"
#include "refold/threads.h"

namespace refold::native {
namespace {

namespace ref = reference::detail;

// The pixels of one output: rows [h0, h1) × columns [w0, w1).
struct Window {
  std::int64_t h0, h1, w0, w1;
  std::int64_t count() const { return (h1 - h0) * (w1 - w0); }
};

// The reductions: a vector step, the combination of two partial results (vectors, then the
// lanes of one, then a chunk's result into the double total) and the output from the total.
struct Sum {
  REFOLD_TARGET_AVX2 static __m256 start() { return _mm256_setzero_ps(); }
  REFOLD_TARGET_AVX2 static __m256 step(__m256 acc, __m256 x) { return _mm256_add_ps(acc, x); }
  static float lane(float a, float b) { return a + b; }
  static double start_total() { return 0; }
  static double total(double t, float x) { return t + x; }
  static double finish(double t, std::int64_t count) { return t / static_cast<double>(count); }
  REFOLD_TARGET_AVX2 static __m256 finish(__m256 t, std::int64_t count) {
    return _mm256_div_ps(t, _mm256_set1_ps(static_cast<float>(count)));
  }
};

// A block's vector k of 4: all 8 lanes where the block is full (plain loads and stores: AMD's
// masked stores are microcoded; a global pool of 8 × 1280 × 7² on Zen 4 took 0.17–0.22 ms masked,
// 0.08–0.10 ms plain), else the lanes of mask m.
template <bool Full>
REFOLD_TARGET_AVX2 __m256 load(const float* p, __m256i m) {
  if constexpr (Full) return _mm256_loadu_ps(p);
  return _mm256_maskload_ps(p, m);
}
template <bool Full>
REFOLD_TARGET_AVX2 void store(float* p, __m256i m, __m256 v) {
  if constexpr (Full)
    _mm256_storeu_ps(p, v);
  else
    _mm256_maskstore_ps(p, m, v);
}

// NHWC, one block of up to 32 channels (all 32 where Full): dst[k] = ⊕_window image[h][w][k] for
// k < lanes, image pointing at the block's first channel of pixel (0, 0); a pixel is c floats,
// a row `row`. Each window row is reduced on its own (4 vectors), then combined into the total.
// With `finish` false dst gets the total as it is (a part of a window, global_nhwc).
template <typename Op, bool Full>
REFOLD_TARGET_AVX2 void block_nhwc(const float* image, std::int64_t c, std::int64_t row,
                                   const Window& win, std::int64_t lanes, float* dst, bool finish) {
  const __m256i m0 = tail_mask(std::clamp<std::int64_t>(lanes, 0, 8));
  const __m256i m1 = tail_mask(std::clamp<std::int64_t>(lanes - 8, 0, 8));
  const __m256i m2 = tail_mask(std::clamp<std::int64_t>(lanes - 16, 0, 8));
  const __m256i m3 = tail_mask(std::clamp<std::int64_t>(lanes - 24, 0, 8));
  __m256 t0 = Op::start(), t1 = t0, t2 = t0, t3 = t0;
  for (std::int64_t h = win.h0; h < win.h1; ++h) {
    const float* p = image + h * row + win.w0 * c;
    __m256 r0 = Op::start(), r1 = r0, r2 = r0, r3 = r0;
    for (std::int64_t w = win.w0; w < win.w1; ++w, p += c) {
      r0 = Op::step(r0, load<Full>(p, m0));
      r1 = Op::step(r1, load<Full>(p + 8, m1));
      r2 = Op::step(r2, load<Full>(p + 16, m2));
      r3 = Op::step(r3, load<Full>(p + 24, m3));
    }
    t0 = Op::step(t0, r0);
    t1 = Op::step(t1, r1);
    t2 = Op::step(t2, r2);
    t3 = Op::step(t3, r3);
  }
  const std::int64_t n = win.count();
  if (finish) {
    t0 = Op::finish(t0, n), t1 = Op::finish(t1, n), t2 = Op::finish(t2, n), t3 = Op::finish(t3, n);
  }
  store<Full>(dst, m0, t0);
  store<Full>(dst + 8, m1, t1);
  store<Full>(dst + 16, m2, t2);
  store<Full>(dst + 24, m3, t3);
}

template <typename Op>
void window_nhwc(const float* image, std::int64_t c, std::int64_t row, const Window& win,
                 std::int64_t lanes, float* dst, bool finish = true) {
  if (lanes == 32)
    block_nhwc<Op, true>(image, c, row, win, lanes, dst, finish);
  else
    block_nhwc<Op, false>(image, c, row, win, lanes, dst, finish);
}

// NHWC, one output pixel per image (global pooling): the image's rows split into up to
// kGlobalParts parts, each part's totals over every channel computed on its own (one job), then
// the parts' totals combined in part order and finished. The parts do not depend on the thread
// count, so neither do the bits. Splitting rows, not channels: a job reads whole pixels, and the
// rows the previous kernel wrote on the same thread (oneDNN's and refold's kernels split their
// outputs by rows), so its reads stay in that core's cache; split by 32-channel blocks, 32
// channels were one job on one thread (EfficientNet-B0's first squeeze-and-excitation pool,
// 32 × 112², took 0.080 ms, ONNX Runtime's 0.045).
constexpr std::int64_t kGlobalParts = 8;

template <typename Op>
void global_nhwc(const float* src, std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w,
                 float* dst, int threads) {
  constexpr std::int64_t kBlock = 32;
  const std::int64_t parts = std::min(kGlobalParts, h), jobs = n * parts;
  std::vector<float> totals(static_cast<std::size_t>(jobs * c));
#pragma omp parallel for schedule(static) num_threads(threads) if (jobs > 1)
  for (std::int64_t job = 0; job < jobs; ++job) {
    const std::int64_t image = job / parts, part = job % parts;
    const Window rows{part * h / parts, (part + 1) * h / parts, 0, w};
    for (std::int64_t b = 0; b * kBlock < c; ++b)
      window_nhwc<Op>(src + image * h * w * c + b * kBlock, c, w * c, rows,
                      std::min(kBlock, c - b * kBlock), totals.data() + job * c + b * kBlock,
                      /*finish=*/false);
  }
  for (std::int64_t image = 0; image < n; ++image) {
    for (std::int64_t k = 0; k < c; ++k) {
      float total = totals[static_cast<std::size_t>(image * parts * c + k)];
      for (std::int64_t part = 1; part < parts; ++part)
        total = Op::lane(total, totals[static_cast<std::size_t>((image * parts + part) * c + k)]);
      dst[image * c + k] = static_cast<float>(Op::finish(total, h * w));
    }
  }
}

// ⊕ p[0 … n) into `total`: float32 over chunks of at most 512 elements (4 vectors each), each
// chunk's result combined into the double total.
template <typename Op>
REFOLD_TARGET_AVX2 double span(const float* p, std::int64_t n, double total) {
  constexpr std::int64_t kChunk = 512;
  for (std::int64_t start = 0; start < n; start += kChunk) {
    const std::int64_t end = std::min(n, start + kChunk);
    __m256 a0 = Op::start(), a1 = a0, a2 = a0, a3 = a0;
    std::int64_t k = start;
    for (; k + 32 <= end; k += 32) {
      a0 = Op::step(a0, _mm256_loadu_ps(p + k));
      a1 = Op::step(a1, _mm256_loadu_ps(p + k + 8));
      a2 = Op::step(a2, _mm256_loadu_ps(p + k + 16));
      a3 = Op::step(a3, _mm256_loadu_ps(p + k + 24));
    }
    // The last partial vectors: a blend keeps the start value in the lanes past the end.
    for (; k < end; k += 8) {
      const __m256i m = tail_mask(std::min<std::int64_t>(8, end - k));
      a0 = Op::step(
          a0, _mm256_blendv_ps(Op::start(), _mm256_maskload_ps(p + k, m), _mm256_castsi256_ps(m)));
    }
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, Op::step(Op::step(a0, a1), Op::step(a2, a3)));
    float chunk = lanes[0];
    for (int l = 1; l < 8; ++l) chunk = Op::lane(chunk, lanes[l]);
    total = Op::total(total, chunk);
  }
  return total;
}

// NCHW: one window of a plane of rows of `w` floats, reduced; a window spanning whole rows is
// one contiguous span.
template <typename Op>
float window_nchw(const float* plane, std::int64_t w, const Window& win) {
  double total = Op::start_total();
  if (win.w0 == 0 && win.w1 == w)
    total = span<Op>(plane + win.h0 * w, (win.h1 - win.h0) * w, total);
  else
    for (std::int64_t h = win.h0; h < win.h1; ++h)
      total = span<Op>(plane + h * w + win.w0, win.w1 - win.w0, total);
  return static_cast<float>(Op::finish(total, win.count()));
}

// The shared body: the declines every pooling here makes, then the output windows of
// `window_of(oh, ow)` reduced by Op.
template <typename Op, typename WindowOf>
Tensor pool(const char* op, const Tensor& input, Size2d out, WindowOf&& window_of,
            std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline(op, "this CPU has no AVX2/FMA", declined);
  if (input.dtype() == DType::BFloat16)
    return rounded(pool<Op>(op, widened(input), out, window_of, declined));
  if (input.dtype() != DType::Float32)
    return decline(op, fmt::format("dtype {}; only float32", dtype_name(input.dtype())), declined);
  const bool four_d = input.dim() == 4;
  const MemoryFormat format = four_d ? input.suggest_memory_format() : MemoryFormat::Contiguous;
  if (!input.is_contiguous(format))
    return decline(op,
                   fmt::format("input strides [{}] are not dense NCHW or NHWC",
                               fmt::join(input.strides(), ", ")),
                   declined);
  const std::int64_t n = four_d ? input.size(0) : 1, c = input.size(-3);
  const std::int64_t in_h = input.size(-2), in_w = input.size(-1);
  if (n == 0) return decline(op, "an empty batch", declined);
  Tensor output = four_d ? empty({n, c, out.h, out.w}, {DType::Float32, format})
                         : empty({c, out.h, out.w}, {DType::Float32});
  const float* src = input.data<float>();
  float* dst = output.data<float>();
  const int threads = get_num_threads();
  const std::int64_t pixels = out.h * out.w;
  if (format == MemoryFormat::ChannelsLast && pixels == 1 &&
      window_of(0, 0).count() == in_h * in_w) {
    global_nhwc<Op>(src, n, c, in_h, in_w, dst, threads);
  } else if (format == MemoryFormat::ChannelsLast) {
    // Jobs: (image, output pixel, block of 32 channels); output pixel p holds c floats.
    constexpr std::int64_t kBlock = 32;
    const std::int64_t blocks = (c + kBlock - 1) / kBlock, jobs = n * pixels * blocks;
#pragma omp parallel for schedule(static) num_threads(threads) if (jobs > 1)
    for (std::int64_t job = 0; job < jobs; ++job) {
      const std::int64_t b = job % blocks, p = job / blocks % pixels, image = job / blocks / pixels;
      window_nhwc<Op>(src + image * in_h * in_w * c + b * kBlock, c, in_w * c,
                      window_of(p / out.w, p % out.w), std::min(kBlock, c - b * kBlock),
                      dst + (image * pixels + p) * c + b * kBlock);
    }
  } else {
    // Jobs: (plane, output pixel), in output order.
    const std::int64_t jobs = n * c * pixels;
#pragma omp parallel for schedule(static) num_threads(threads) if (jobs > 1)
    for (std::int64_t job = 0; job < jobs; ++job) {
      const std::int64_t p = job % pixels, plane = job / pixels;
      dst[job] = window_nchw<Op>(src + plane * in_h * in_w, in_w, window_of(p / out.w, p % out.w));
    }
  }
  return output;
}

}  // namespace

Tensor adaptive_avg_pool2d(const Tensor& input, Size2d output_size, std::string* declined) {
  constexpr const char* op = "adaptive_avg_pool2d";
  ref::check_pool_input(input, op);
  if (output_size.h <= 0 || output_size.w <= 0)
    return decline(
        op, fmt::format("output_size ({}, {}) is not positive", output_size.h, output_size.w),
        declined);
  const std::int64_t in_h = input.size(-2), in_w = input.size(-1);
  const auto window_of = [&](std::int64_t oh, std::int64_t ow) {
    const auto [h0, h1] = ref::adaptive_window(op, oh, in_h, output_size.h);
    const auto [w0, w1] = ref::adaptive_window(op, ow, in_w, output_size.w);
    return Window{h0, h1, w0, w1};
  };
  return pool<Sum>(op, input, output_size, window_of, declined);
}

}  // namespace refold::native
