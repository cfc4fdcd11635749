// native::resize2d (resize2d.h): the declines, the per-dimension tap tables and the two-pass
// row loop for NHWC and NCHW.
#include "kernels/native/resize2d.h"

#include <immintrin.h>

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

// One dimension's taps in float32: output x = w0[x]·in[i0[x]] + w1[x]·in[i1[x]].
struct Taps1d {
  std::vector<std::int32_t> i0, i1;
  std::vector<float> w0, w1;

  explicit Taps1d(const std::vector<ResizeTap>& taps) {
    for (const ResizeTap& t : taps) {
      i0.push_back(static_cast<std::int32_t>(t.i0));
      i1.push_back(static_cast<std::int32_t>(t.i1));
      w0.push_back(static_cast<float>(t.w0));
      w1.push_back(static_cast<float>(t.w1));
    }
  }
  bool same(std::size_t a, std::size_t b) const {
    return i0[a] == i0[b] && i1[a] == i1[b] && w0[a] == w0[b] && w1[a] == w1[b];
  }
};

// Output x reads input x alone: the dimension is not resized.
bool is_identity(const std::vector<ResizeTap>& taps) {
  for (std::size_t x = 0; x < taps.size(); ++x)
    if (taps[x].i0 != static_cast<std::int64_t>(x) || taps[x].w1 != 0) return false;
  return true;
}

// dst[k] = w0·a[k] + w1·b[k] for k < n.
REFOLD_TARGET_AVX2 inline void blend_rows(const float* a, const float* b, float w0, float w1,
                                          float* dst, std::int64_t n) {
  const __m256 v0 = _mm256_set1_ps(w0), v1 = _mm256_set1_ps(w1);
  std::int64_t k = 0;
  for (; k + 8 <= n; k += 8)
    _mm256_storeu_ps(dst + k, _mm256_fmadd_ps(v1, _mm256_loadu_ps(b + k),
                                              _mm256_mul_ps(v0, _mm256_loadu_ps(a + k))));
  if (k == n) return;
  const __m256i m = tail_mask(n - k);
  _mm256_maskstore_ps(dst + k, m,
                      _mm256_fmadd_ps(v1, _mm256_maskload_ps(b + k, m),
                                      _mm256_mul_ps(v0, _mm256_maskload_ps(a + k, m))));
}

// NHWC: one output row of out_w pixels × c channels from a row of input pixels.
REFOLD_TARGET_AVX2 void nhwc_columns(const float* src, const Taps1d& x, std::int64_t c,
                                     float* dst) {
  const auto bytes = static_cast<std::size_t>(c) * sizeof(float);
  for (std::size_t ox = 0; ox < x.i0.size(); ++ox, dst += c) {
    const float* a = src + x.i0[ox] * c;
    if (x.w1[ox] == 0)
      std::memcpy(dst, a, bytes);
    else
      blend_rows(a, src + x.i1[ox] * c, x.w0[ox], x.w1[ox], dst, c);
  }
}

// NCHW: one output row of out_w values from an input row, 8 output columns per vector (gathers).
// Where w1 = 0, w0 = 1 and the output is in[i0] itself (an Inf/NaN at i1 must not reach it).
REFOLD_TARGET_AVX2 void nchw_columns(const float* src, const Taps1d& x, float* dst) {
  const auto out_w = static_cast<std::int64_t>(x.i0.size());
  const __m256 zero = _mm256_setzero_ps();
  std::int64_t ox = 0;
  for (; ox + 8 <= out_w; ox += 8) {
    const __m256i i0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.i0.data() + ox));
    const __m256i i1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.i1.data() + ox));
    const __m256 w0 = _mm256_loadu_ps(x.w0.data() + ox), w1 = _mm256_loadu_ps(x.w1.data() + ox);
    const __m256 a = _mm256_i32gather_ps(src, i0, 4);
    const __m256 blended =
        _mm256_fmadd_ps(w1, _mm256_i32gather_ps(src, i1, 4), _mm256_mul_ps(w0, a));
    _mm256_storeu_ps(dst + ox, _mm256_blendv_ps(blended, a, _mm256_cmp_ps(w1, zero, _CMP_EQ_OQ)));
  }
  for (; ox < out_w; ++ox) {
    const auto k = static_cast<std::size_t>(ox);
    const float a = src[x.i0[k]];
    dst[ox] = x.w1[k] == 0 ? a : std::fma(x.w1[k], src[x.i1[k]], x.w0[k] * a);
  }
}

// The shared row loop. Output rows are (outer, y) for outer < outers (the batch for NHWC, the
// N·C planes for NCHW), each out_row floats; `row(outer, y, scratch, output row)` fills one,
// with scratch for an input row of in_row floats. A row whose tap equals the previous row's,
// computed just before by the same thread, is a copy of it.
template <typename Row>
void for_each_output_row(const Taps1d& y, std::int64_t outers, std::int64_t in_row, float* out,
                         std::int64_t out_row, Row&& row) {
  const auto out_h = static_cast<std::int64_t>(y.i0.size());
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
  if (params.mode == reference::ResizeMode::Cubic) return decline(kOp, "cubic mode", declined);
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
  std::vector<std::vector<ResizeTap>> taps;
  for (std::size_t d = 0; d < 4; ++d)
    if (d >= 2 || out_sizes[d] == in[d])
      taps.push_back(
          reference::detail::resize_taps(in[d], out_sizes[d], scales[d], lengths[d], params));
  if (taps.size() < 4 || !is_identity(taps[0]) || !is_identity(taps[1]))
    return decline(
        kOp,
        fmt::format("only H and W are resized ([{}] → [{}] scales [{}])", fmt::join(in, ", "),
                    fmt::join(out_sizes, ", "), fmt::join(scales, ", ")),
        declined);

  Tensor output = empty(out_sizes, {DType::Float32, format});
  const Taps1d y(taps[2]), x(taps[3]);
  const std::int64_t n = in[0], c = in[1], in_h = in[2], in_w = in[3];
  const std::int64_t out_w = out_sizes[3];
  const float* src = input.data<float>();
  float* dst = output.data<float>();
  // Source row of output row y of an outer index: rows i0, i1 of its input, blended by w0, w1.
  auto source_row = [&](const float* base, std::int64_t row, std::size_t oy, float* scratch) {
    const float* r0 = base + y.i0[oy] * row;
    if (y.w1[oy] == 0) return r0;
    blend_rows(r0, base + y.i1[oy] * row, y.w0[oy], y.w1[oy], scratch, row);
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
