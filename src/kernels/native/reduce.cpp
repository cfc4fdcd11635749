#include "kernels/native/reduce.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "kernels/native/decline.h"
#include "kernels/native/float_sums.h"
#include "kernels/native/row_threads.h"
#include "kernels/native/vector_math.h"

namespace refold::native {
namespace {

using reference::ReduceOp;

// X in memory order as [outer][count][inner]: the kept block, the reduced block, the kept block.
struct Blocks {
  std::int64_t outer = 1, count = 1, inner = 1;
};

// Columns a vertical job reduces: 8 vectors, so a job's accumulators stay in L1.
constexpr std::int64_t kColumnsPerJob = 64;

// max and min where NaN wins, as the reference's accumulate(): a lane with a NaN in either
// operand becomes a + b (NaN).
template <bool max>
REFOLD_TARGET_AVX2 inline __m256 extreme(__m256 a, __m256 b) {
  const __m256 m = max ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
  return _mm256_blendv_ps(m, _mm256_add_ps(a, b), _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}
template <bool max>
inline float extreme(float a, float b) {
  if (a != a || b != b) return a + b;
  return max ? std::max(a, b) : std::min(a, b);
}

template <bool max>
REFOLD_TARGET_AVX2 float row_extreme(const float* x, std::int64_t n) {
  const float start =
      max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  __m256 acc = _mm256_set1_ps(start);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = extreme<max>(acc, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc);
  float result = start;
  for (const float v : lanes) result = extreme<max>(result, v);
  for (; i < n; ++i) result = extreme<max>(result, x[i]);
  return result;
}

// acc[j] = extreme(acc[j], x[r·row_stride + j]) over the rows, j < width.
template <bool max>
REFOLD_TARGET_AVX2 void column_extremes(const float* x, std::int64_t rows, std::int64_t width,
                                        std::int64_t row_stride, float* acc) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * row_stride;
    std::int64_t j = 0;
    for (; j + 8 <= width; j += 8)
      _mm256_storeu_ps(acc + j, extreme<max>(_mm256_loadu_ps(acc + j), _mm256_loadu_ps(row + j)));
    for (; j < width; ++j) acc[j] = extreme<max>(acc[j], row[j]);
  }
}

// The sum a reduction accumulates: Σx (Sum, Mean, LogSum), Σx² (L2, SumSquare) or Σ|x| (L1).
double row_sum(ReduceOp op, const float* x, std::int64_t n) {
  if (op == ReduceOp::L2 || op == ReduceOp::SumSquare) return squared_deviation_sum(x, n, 0.0);
  return op == ReduceOp::L1 ? abs_sum(x, n) : sum(x, n);
}

void add_column_sums(ReduceOp op, const float* x, std::int64_t rows, std::int64_t width,
                     std::int64_t row_stride, double* acc) {
  static constexpr double kZeros[kColumnsPerJob] = {};
  if (op == ReduceOp::L2 || op == ReduceOp::SumSquare)
    add_squared_deviation_columns(x, rows, width, row_stride, kZeros, acc);
  else if (op == ReduceOp::L1)
    add_abs_columns(x, rows, width, row_stride, acc);
  else
    add_columns(x, rows, width, row_stride, acc);
}

// [outer][count] rows, one output each: y[o] = ⊕_k x[o][k].
void reduce_rows(const float* in, float* out, const Blocks& b, ReduceOp op, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && b.outer > 1)
  for (std::int64_t o = 0; o < b.outer; ++o) {
    const float* x = in + o * b.count;
    switch (op) {
      case ReduceOp::Max:
        out[o] = row_extreme<true>(x, b.count);
        break;
      case ReduceOp::Min:
        out[o] = row_extreme<false>(x, b.count);
        break;
      default:
        out[o] = static_cast<float>(reference::reduce_finish(op, row_sum(op, x, b.count), b.count));
    }
  }
}

// y[j] = reference::reduce_finish(op, acc[j], count), j < width: the sums and the mean inline
// (a loop the compiler vectorizes), the square root and log through the reference's own call.
void finish_columns(ReduceOp op, const double* acc, std::int64_t width, std::int64_t count,
                    float* y) {
  if (op == ReduceOp::Mean) {
    const auto n = static_cast<double>(count);
    for (std::int64_t j = 0; j < width; ++j) y[j] = static_cast<float>(acc[j] / n);
  } else if (op == ReduceOp::Sum || op == ReduceOp::SumSquare || op == ReduceOp::L1) {
    for (std::int64_t j = 0; j < width; ++j) y[j] = static_cast<float>(acc[j]);
  } else {
    for (std::int64_t j = 0; j < width; ++j)
      y[j] = static_cast<float>(reference::reduce_finish(op, acc[j], count));
  }
}

// [outer][count][inner], one output per (o, i): y[o][i] = ⊕_k x[o][k][i], vectorized along i.
void reduce_columns(const float* in, float* out, const Blocks& b, ReduceOp op, int threads) {
  const std::int64_t chunks = (b.inner + kColumnsPerJob - 1) / kColumnsPerJob;
#pragma omp parallel for schedule(static) \
    num_threads(threads) if (threads > 1 && b.outer * chunks > 1)
  for (std::int64_t job = 0; job < b.outer * chunks; ++job) {
    const std::int64_t o = job / chunks, first = job % chunks * kColumnsPerJob;
    const std::int64_t width = std::min(kColumnsPerJob, b.inner - first);
    const float* x = in + o * b.count * b.inner + first;
    float* y = out + o * b.inner + first;
    if (op == ReduceOp::Max || op == ReduceOp::Min) {
      const bool max = op == ReduceOp::Max;
      std::fill_n(
          y, width,
          max ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity());
      (max ? column_extremes<true> : column_extremes<false>)(x, b.count, width, b.inner, y);
    } else {
      double acc[kColumnsPerJob] = {};
      add_column_sums(op, x, b.count, width, b.inner, acc);
      finish_columns(op, acc, width, b.count, y);
    }
  }
}

}  // namespace

Tensor reduce(const Tensor& x, const std::vector<std::int64_t>& axes, bool keepdims, ReduceOp op,
              std::string* declined) {
  const char* name = reference::reduce_name(op);
  if (op == ReduceOp::Prod || op == ReduceOp::LogSumExp)
    return decline(name, "Prod and LogSumExp have no native kernel", declined);
  if (!cpu_has_avx2_fma()) return decline(name, "the CPU lacks AVX2/FMA", declined);
  if (!x.defined() || x.dtype() != DType::Float32)
    return decline(name, "X is not float32", declined);
  if (x.numel() == 0) return decline(name, "X has no elements", declined);
  if (!x.is_non_overlapping_and_dense())
    return decline(name, "X is not dense (a strided view)", declined);
  const std::int64_t rank = x.dim();
  std::vector<bool> reduced(static_cast<std::size_t>(rank), false);
  for (const std::int64_t axis : axes) {
    if (axis < -rank || axis >= rank) return decline(name, "an axis is out of range", declined);
    const auto d = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    if (reduced[d]) return decline(name, "an axis is given twice", declined);
    reduced[d] = true;
  }
  // The dims of size > 1, outermost (largest stride) first.
  std::vector<std::int64_t> order;
  for (std::int64_t d = 0; d < rank; ++d)
    if (x.size(d) > 1) order.push_back(d);
  std::sort(order.begin(), order.end(),
            [&](std::int64_t a, std::int64_t b) { return x.stride(a) > x.stride(b); });
  // The output's sizes, and strides that lay its kept dims out in X's memory order (the
  // kernels write it so; it is made contiguous at the end when that order is not logical).
  Shape out_sizes, out_strides, out_dim_of(static_cast<std::size_t>(rank), -1);
  for (std::int64_t d = 0; d < rank; ++d) {
    if (reduced[static_cast<std::size_t>(d)] && !keepdims) continue;
    out_dim_of[static_cast<std::size_t>(d)] = static_cast<std::int64_t>(out_sizes.size());
    out_sizes.push_back(reduced[static_cast<std::size_t>(d)] ? 1 : x.size(d));
  }
  out_strides.assign(out_sizes.size(), 1);
  std::int64_t step = 1;
  for (auto d = order.rbegin(); d != order.rend(); ++d) {
    if (reduced[static_cast<std::size_t>(*d)]) continue;
    out_strides[static_cast<std::size_t>(out_dim_of[static_cast<std::size_t>(*d)])] = step;
    step *= x.size(*d);
  }
  // Merge runs of kept and reduced dims: kept, reduced, kept at most.
  Blocks b;
  int phase = 0;  // 0 outer kept, 1 reduced, 2 inner kept
  for (const std::int64_t d : order) {
    const bool r = reduced[static_cast<std::size_t>(d)];
    if (phase == 0 && r) phase = 1;
    if (phase == 1 && !r) phase = 2;
    if (phase == 2 && r)
      return decline(name, "the reduced axes are not one block in memory", declined);
    (phase == 0 ? b.outer : phase == 1 ? b.count : b.inner) *= x.size(d);
  }

  Tensor y = empty_strided(out_sizes, out_strides, DType::Float32);
  const int threads = row_kernel_threads(x.numel());
  if (b.inner == 1)
    reduce_rows(x.data<float>(), y.data<float>(), b, op, threads);
  else
    reduce_columns(x.data<float>(), y.data<float>(), b, op, threads);
  if (y.is_contiguous()) return y;
  // Kept dims out of logical order in memory (NHWC reducing W: N, H, C): transpose the result.
  Tensor contiguous = empty(out_sizes, DType::Float32);
  contiguous.copy_(y);
  return contiguous;
}

}  // namespace refold::native
