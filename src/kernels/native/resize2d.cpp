// native::resize2d (resize2d.h): the declines, the per-dimension tap tables and the two-pass
// row loop for NHWC and NCHW.
#include "kernels/native/resize2d.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/tail_mask.h"
#include "kernels/reference/resize_taps.h"
#include "refold/threads.h"

namespace refold::native {
namespace {

constexpr const char* kOp = "resize";
using reference::detail::ResizeTap;

// One dimension's taps in float32: output x = Σ_k weight[x][k] · in[index[x][k]], k < count (2
// for nearest and linear, 4 for cubic); a zero weight is a tap to skip.
struct Taps1d {
  std::size_t count = 2;
  std::vector<std::int32_t> index;  // [out][count]
  std::vector<float> weight;        // [out][count]

  // When every output reads one input with weight 1 (nearest, or an integer-ratio linear
  // downsampling that lands on samples): that input per output, else empty.
  std::vector<std::int32_t> single_index;

  explicit Taps1d(const std::vector<ResizeTap>& taps) {
    for (const ResizeTap& t : taps) add({{t.i0, t.w0}, {t.i1, t.w1}});
    find_single_index();
  }
  explicit Taps1d(const reference::detail::FilterTaps& taps) : count(4) {
    for (const auto& t : taps) add(t);
    find_single_index();
  }
  std::size_t size() const { return index.size() / count; }
  const std::int32_t* indices(std::size_t x) const { return index.data() + x * count; }
  const float* weights(std::size_t x) const { return weight.data() + x * count; }
  // Output x reads one input with weight 1 (nearest, or landing on a sample): a copy.
  bool single(std::size_t x) const {
    const float* w = weights(x);
    for (std::size_t k = 1; k < count; ++k)
      if (w[k] != 0) return false;
    return w[0] == 1;
  }
  bool same(std::size_t a, std::size_t b) const {
    return std::equal(indices(a), indices(a) + count, indices(b)) &&
           std::equal(weights(a), weights(a) + count, weights(b));
  }
  // Every tap of output x reads input x: the dimension is not resized (cubic's taps at a size-1
  // dimension all read its one element, clamped, with weights that sum to 1).
  bool is_identity() const {
    for (std::size_t x = 0; x < size(); ++x)
      for (std::size_t t = 0; t < count; ++t)
        if (weights(x)[t] != 0 && indices(x)[t] != static_cast<std::int32_t>(x)) return false;
    return true;
  }

 private:
  void find_single_index() {
    for (std::size_t x = 0; x < size(); ++x)
      if (!single(x)) return;
    for (std::size_t x = 0; x < size(); ++x) single_index.push_back(indices(x)[0]);
  }
  // The taps with nonzero weight first, padded with zero weights on the first one's index.
  void add(const std::vector<std::pair<std::int64_t, double>>& taps) {
    std::vector<std::pair<std::int64_t, double>> live;
    for (const auto& tap : taps)
      if (tap.second != 0) live.push_back(tap);
    if (live.empty()) live.emplace_back(0, 0.0);  // every weight 0 (they sum to 1: no)
    for (std::size_t t = 0; t < count; ++t) {
      const bool used = t < live.size();
      index.push_back(static_cast<std::int32_t>(live[used ? t : 0].first));
      weight.push_back(used ? static_cast<float>(live[t].second) : 0.0f);
    }
  }
};

// dst[k] = Σ_t w[t]·rows[t][k] for k < n, over the taps t with w[t] ≠ 0.
REFOLD_TARGET_AVX2 inline void blend_rows(const float* const* rows, const float* w,
                                          std::size_t taps, float* dst, std::int64_t n) {
  std::size_t live[4], count = 0;
  for (std::size_t t = 0; t < taps; ++t)
    if (w[t] != 0) live[count++] = t;
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    __m256 acc = _mm256_mul_ps(_mm256_set1_ps(w[live[0]]), _mm256_loadu_ps(rows[live[0]] + k));
    for (std::size_t j = 1; j < count; ++j)
      acc = _mm256_fmadd_ps(_mm256_set1_ps(w[live[j]]), _mm256_loadu_ps(rows[live[j]] + k), acc);
    _mm256_storeu_ps(dst + k, acc);
  }
  if (k == n) return;
  const __m256i m = tail_mask(n - k);
  __m256 acc = _mm256_mul_ps(_mm256_set1_ps(w[live[0]]), _mm256_maskload_ps(rows[live[0]] + k, m));
  for (std::size_t j = 1; j < count; ++j)
    acc =
        _mm256_fmadd_ps(_mm256_set1_ps(w[live[j]]), _mm256_maskload_ps(rows[live[j]] + k, m), acc);
  _mm256_maskstore_ps(dst + k, m, acc);
}

// dst[k] = src[k], k < n, n small (a pixel's channels): vector moves, no call.
REFOLD_TARGET_AVX2 inline void copy_floats(const float* src, float* dst, std::int64_t n) {
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8) _mm256_storeu_ps(dst + k, _mm256_loadu_ps(src + k));
  if (k == n) return;
  const __m256i m = tail_mask(n - k);
  _mm256_maskstore_ps(dst + k, m, _mm256_maskload_ps(src + k, m));
}

// NHWC: one output row of out_w pixels × c channels from a row of input pixels.
REFOLD_TARGET_AVX2 void nhwc_columns(const float* src, const Taps1d& x, std::int64_t c,
                                     float* dst) {
  if (!x.single_index.empty() && c <= 256) {  // a pixel's copy: a few vectors, not a memcpy call
    for (const std::int32_t i : x.single_index) {
      copy_floats(src + i * c, dst, c);
      dst += c;
    }
    return;
  }
  const auto bytes = static_cast<std::size_t>(c) * sizeof(float);
  for (std::size_t ox = 0; ox < x.size(); ++ox, dst += c) {
    const std::int32_t* i = x.indices(ox);
    if (x.single(ox)) {
      std::memcpy(dst, src + i[0] * c, bytes);
      continue;
    }
    const float* rows[4];
    for (std::size_t t = 0; t < x.count; ++t) rows[t] = src + i[t] * c;
    blend_rows(rows, x.weights(ox), x.count, dst, c);
  }
}

// NCHW: one output row of out_w values from an input row, 8 output columns per vector (gathers).
// A tap of weight 0 contributes 0, not 0·in (an Inf/NaN it would read must not reach the output).
REFOLD_TARGET_AVX2 void nchw_columns(const float* src, const Taps1d& x, float* dst) {
  const auto out_w = static_cast<std::int64_t>(x.size());
  const auto taps = static_cast<std::int64_t>(x.count);
  if (!x.single_index.empty()) {  // one gather of the inputs per 8 columns, no weights
    const std::int32_t* index = x.single_index.data();
    std::int64_t ox = 0;
    for (; ox + 8 <= out_w; ox += 8)
      _mm256_storeu_ps(
          dst + ox, _mm256_i32gather_ps(
                        src, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(index + ox)), 4));
    for (; ox < out_w; ++ox) dst[ox] = src[index[ox]];
    return;
  }
  const __m256 zero = _mm256_setzero_ps();
  // Column ox's tap t: index and weight at [ox·taps + t]; 8 columns are read with that stride.
  const __m256i lanes = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                           _mm256_set1_epi32(static_cast<int>(taps)));
  std::int64_t ox = 0;
  for (; ox + 8 <= out_w; ox += 8) {
    // Tap 0 has a nonzero weight (Taps1d puts those first); a later tap of weight 0 reads 0.
    __m256 acc = zero;
    for (std::int64_t t = 0; t < taps; ++t) {
      const std::int64_t at = ox * taps + t;
      const __m256i i = _mm256_i32gather_epi32(x.index.data() + at, lanes, 4);
      const __m256 w = _mm256_i32gather_ps(x.weight.data() + at, lanes, 4);
      const __m256 in = _mm256_i32gather_ps(src, i, 4);
      acc = t == 0
                ? _mm256_mul_ps(w, in)
                : _mm256_fmadd_ps(w, _mm256_and_ps(in, _mm256_cmp_ps(w, zero, _CMP_NEQ_OQ)), acc);
    }
    _mm256_storeu_ps(dst + ox, acc);
  }
  for (; ox < out_w; ++ox) {
    const auto u = static_cast<std::size_t>(ox);
    const std::int32_t* i = x.indices(u);
    const float* w = x.weights(u);
    float v = w[0] * src[i[0]];
    for (std::size_t t = 1; t < x.count; ++t)
      if (w[t] != 0) v = std::fma(w[t], src[i[t]], v);
    dst[ox] = v;
  }
}

// The shared row loop. Output rows are (outer, y) for outer < outers (the batch for NHWC, the
// N·C planes for NCHW), each out_row floats; `row(outer, y, scratch, output row)` fills one,
// with scratch for an input row of in_row floats. A row whose tap equals the previous row's,
// computed just before by the same thread, is a copy of it.
template <typename Row>
void for_each_output_row(const Taps1d& y, std::int64_t outers, std::int64_t in_row, float* out,
                         std::int64_t out_row, Row&& row) {
  const auto out_h = static_cast<std::int64_t>(y.size());
  const std::int64_t rows = outers * out_h;
#pragma omp parallel num_threads(get_num_threads()) if (rows > 1)
  {
    std::vector<float> scratch(static_cast<std::size_t>(in_row));
    std::int64_t previous = -2;
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto oy = static_cast<std::size_t>(r % out_h);
      float* dst = out + r * out_row;
      const bool repeat = previous == r - 1 && oy > 0 && y.same(oy, oy - 1);
      previous = r;
      if (repeat)
        std::memcpy(dst, dst - out_row, static_cast<std::size_t>(out_row) * sizeof(float));
      else
        row(r / out_h, oy, scratch.data(), dst);
    }
  }
}

}  // namespace

Tensor resize2d(const Tensor& input, const Shape& out_sizes, const std::vector<double>& scales,
                const std::vector<double>& lengths, const reference::ResizeParams& params,
                std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline(kOp, "this CPU has no AVX2/FMA", declined);
  if (!input.defined() || input.dim() != 4 || out_sizes.size() != 4 || scales.size() != 4 ||
      lengths.size() != 4)
    return decline(kOp, "only 4-d [N, C, H, W] inputs", declined);
  if (input.dtype() != DType::Float32)
    return decline(kOp, fmt::format("dtype {}; only float32", dtype_name(input.dtype())), declined);
  for (std::size_t d = 0; d < 4; ++d)
    if (!(std::isfinite(scales[d]) && scales[d] > 0) || out_sizes[d] < 0)
      return decline(kOp, "invalid scales or sizes (the reference reports them)", declined);
  const MemoryFormat format = input.suggest_memory_format();
  if (!input.is_contiguous(format))
    return decline(kOp,
                   fmt::format("input strides [{}] are not dense NCHW or NHWC",
                               fmt::join(input.strides(), ", ")),
                   declined);
  const Shape& in = input.sizes();
  if (input.numel() == 0 || out_sizes[0] * out_sizes[1] * out_sizes[2] * out_sizes[3] == 0)
    return decline(kOp, "an empty input or output", declined);
  if (in[3] * in[1] > std::numeric_limits<std::int32_t>::max())
    return decline(kOp, "an input row of 2^31 elements or more", declined);
  // N and C must come out as they are: same sizes, and taps that are the identity (scale 1 is
  // not always: tf_half_pixel_for_nn samples x + 0.5).
  const bool cubic = params.mode == reference::ResizeMode::Cubic;
  if (reference::detail::resize_antialias_stretches(params, scales))
    return decline(kOp, "antialiased downsampling (more than 4 taps an output)", declined);
  std::vector<Taps1d> taps;
  for (std::size_t d = 0; d < 4; ++d) {
    if (d < 2 && out_sizes[d] != in[d]) break;
    if (cubic)
      taps.emplace_back(reference::detail::resize_filter_taps(in[d], out_sizes[d], scales[d],
                                                              lengths[d], params));
    else
      taps.emplace_back(
          reference::detail::resize_taps(in[d], out_sizes[d], scales[d], lengths[d], params));
  }
  if (taps.size() < 4 || !taps[0].is_identity() || !taps[1].is_identity())
    return decline(
        kOp,
        fmt::format("only H and W are resized ([{}] → [{}] scales [{}])", fmt::join(in, ", "),
                    fmt::join(out_sizes, ", "), fmt::join(scales, ", ")),
        declined);

  Tensor output = empty(out_sizes, {DType::Float32, format});
  const Taps1d &y = taps[2], &x = taps[3];
  const std::int64_t n = in[0], c = in[1], in_h = in[2], in_w = in[3];
  const std::int64_t out_w = out_sizes[3];
  const float* src = input.data<float>();
  float* dst = output.data<float>();
  // Source row of output row y of an outer index: its input rows blended by their weights.
  auto source_row = [&](const float* base, std::int64_t row, std::size_t oy, float* scratch) {
    const std::int32_t* i = y.indices(oy);
    if (y.single(oy)) return base + i[0] * row;
    const float* rows[4];
    for (std::size_t t = 0; t < y.count; ++t) rows[t] = base + i[t] * row;
    blend_rows(rows, y.weights(oy), y.count, scratch, row);
    return static_cast<const float*>(scratch);
  };
  if (format == MemoryFormat::ChannelsLast) {
    // Rows of W·C floats; outer index: the batch.
    const std::int64_t in_row = in_w * c;
    for_each_output_row(y, n, in_row, dst, out_w * c,
                        [&](std::int64_t b, std::size_t oy, float* scratch, float* row) {
                          const float* s = source_row(src + b * in_h * in_row, in_row, oy, scratch);
                          nhwc_columns(s, x, c, row);
                        });
  } else {
    // Rows of W floats; outer index: the plane (n, c).
    for_each_output_row(y, n * c, in_w, dst, out_w,
                        [&](std::int64_t plane, std::size_t oy, float* scratch, float* row) {
                          const float* s = source_row(src + plane * in_h * in_w, in_w, oy, scratch);
                          nchw_columns(s, x, row);
                        });
  }
  return output;
}

}  // namespace refold::native
