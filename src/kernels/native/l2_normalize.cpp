#include "kernels/native/l2_normalize.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/float_sums.h"
#include "kernels/native/row_threads.h"
#include "kernels/reference/onnx_ops.h"
#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>

#include "kernels/native/tail_mask.h"
#endif

namespace refold::native {
namespace {

constexpr std::string_view kName = "L2Normalize";

// Columns a job sums across: 8 vectors, so its accumulators and denominators stay in L1.
constexpr std::int64_t kColumnsPerJob = 64;

// max(‖x‖, ε) from Σx² over `count` values: ReduceL2's rounding, then Clip's (a NaN norm stays
// NaN, as Clip leaves it).
float denominator(double squares, std::int64_t count, float epsilon) {
  const auto norm =
      static_cast<float>(reference::reduce_finish(reference::ReduceOp::L2, squares, count));
  return norm < epsilon ? epsilon : norm;
}

#if REFOLD_HAVE_X86_KERNELS
// y[i] = x[i] / d, i < n.
REFOLD_TARGET_AVX2 void divide_row(const float* x, float* y, std::int64_t n, float d) {
  const __m256 v = _mm256_set1_ps(d);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_div_ps(_mm256_loadu_ps(x + i), v));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, _mm256_div_ps(_mm256_maskload_ps(x + i, m), v));
  }
}

// y[j] = x[j] / d[j], j < n.
REFOLD_TARGET_AVX2 void divide_columns(const float* x, float* y, std::int64_t n, const float* d) {
  std::int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    _mm256_storeu_ps(y + j, _mm256_div_ps(_mm256_loadu_ps(x + j), _mm256_loadu_ps(d + j)));
  if (j < n) {
    const __m256i m = tail_mask(n - j);
    _mm256_maskstore_ps(y + j, m,
                        _mm256_div_ps(_mm256_maskload_ps(x + j, m), _mm256_maskload_ps(d + j, m)));
  }
}
#else
void divide_row(const float*, float*, std::int64_t, float) {}
void divide_columns(const float*, float*, std::int64_t, const float*) {}
#endif

}  // namespace

Tensor l2_normalize(const Tensor& x, std::int64_t axis, float epsilon, std::string* declined) {
  if (!cpu_has_avx2_fma()) return decline(kName, "the CPU lacks AVX2/FMA", declined);
  if (!x.defined() || x.dtype() != DType::Float32)
    return decline(kName, "X is not float32", declined);
  const std::int64_t rank = x.dim();
  if (rank == 0 || axis < -rank || axis >= rank)
    return decline(kName, "the axis is outside X's dims", declined);
  if (x.numel() == 0) return decline(kName, "X has no elements", declined);
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  const std::int64_t count = x.size(a);
  // The axis's stride; a one-element axis lies above every other dim (each element is its own
  // vector, the kept dims one run).
  const std::int64_t step = count > 1 ? x.stride(a) : std::numeric_limits<std::int64_t>::max();
  if (step <= 0) return decline(kName, "the axis is broadcast or reversed", declined);
  // The kept dims of size > 1, outermost first, split at the axis.
  std::vector<std::int64_t> outer, inner;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d == a || x.size(d) == 1) continue;
    if (x.stride(d) <= 0) return decline(kName, "a dim of X is broadcast or reversed", declined);
    (x.stride(d) < step ? inner : outer).push_back(d);
  }
  const auto outermost_first = [&](std::int64_t p, std::int64_t q) {
    return x.stride(p) > x.stride(q);
  };
  std::stable_sort(outer.begin(), outer.end(), outermost_first);
  std::stable_sort(inner.begin(), inner.end(), outermost_first);
  std::int64_t width = 1;  // the contiguous run below the axis
  for (auto d = inner.rbegin(); d != inner.rend(); ++d) {
    if (x.stride(*d) != width)
      return decline(kName, "the dims below the axis in memory are not one contiguous run",
                     declined);
    width *= x.size(*d);
  }
  if (width == 1 && count > 1 && step != 1)
    return decline(kName, "the axis is strided and no dim below it is contiguous", declined);

  // The output, dense in X's memory order: the run, then the axis, then the outer dims.
  Shape y_strides(static_cast<std::size_t>(rank), 0);
  std::int64_t span = 1;
  for (auto d = inner.rbegin(); d != inner.rend(); ++d) {
    y_strides[static_cast<std::size_t>(*d)] = span;
    span *= x.size(*d);
  }
  y_strides[static_cast<std::size_t>(a)] = span;
  span *= count;
  for (auto d = outer.rbegin(); d != outer.rend(); ++d) {
    y_strides[static_cast<std::size_t>(*d)] = span;
    span *= x.size(*d);
  }
  // A size-1 dim takes the stride a contiguous layout gives it (its logical successor's span).
  for (std::int64_t d = rank - 1, next = 1; d >= 0; --d) {
    if (x.size(d) == 1) y_strides[static_cast<std::size_t>(d)] = next;
    next = y_strides[static_cast<std::size_t>(d)] * x.size(d);
  }
  Tensor y = empty_strided(x.sizes(), y_strides, DType::Float32);

  std::int64_t outer_count = 1;
  for (const std::int64_t d : outer) outer_count *= x.size(d);
  const std::int64_t chunks = width == 1 ? 1 : (width + kColumnsPerJob - 1) / kColumnsPerJob;
  const float* in = x.data<float>();
  float* out = y.data<float>();
  const int threads = row_kernel_threads(x.numel());
  // Per vector v along the axis: y = v / max(√Σv², ε). Rows (width 1) are summed along, else
  // `width` vectors side by side are summed across, kColumnsPerJob at a time.
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
  for (std::int64_t job = 0; job < outer_count * chunks; ++job) {
    std::int64_t o = job / chunks, x_at = 0, y_at = 0;
    for (auto d = outer.rbegin(); d != outer.rend(); ++d) {
      const std::int64_t i = o % x.size(*d);
      o /= x.size(*d);
      x_at += i * x.stride(*d);
      y_at += i * y_strides[static_cast<std::size_t>(*d)];
    }
    if (width == 1) {
      const float* v = in + x_at;
      divide_row(v, out + y_at, count,
                 denominator(squared_deviation_sum(v, count, 0.0), count, epsilon));
      continue;
    }
    static constexpr double kZeros[kColumnsPerJob] = {};
    const std::int64_t first = job % chunks * kColumnsPerJob;
    const std::int64_t columns = std::min(kColumnsPerJob, width - first);
    const float* v = in + x_at + first;
    float* w = out + y_at + first;
    const std::int64_t row_stride = count > 1 ? step : 0;
    double squares[kColumnsPerJob] = {};
    add_squared_deviation_columns(v, count, columns, row_stride, kZeros, squares);
    float denominators[kColumnsPerJob];
    for (std::int64_t j = 0; j < columns; ++j)
      denominators[j] = denominator(squares[j], count, epsilon);
    for (std::int64_t r = 0; r < count; ++r)
      divide_columns(v + r * row_stride, w + r * width, columns, denominators);
  }
  return y;
}

}  // namespace refold::native
