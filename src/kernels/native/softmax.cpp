#include "kernels/native/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"
#include "kernels/native/vector_math.h"

namespace refold::native {
namespace {

using reference::SoftmaxKind;

// Below this many columns (one AVX2 vector) a strided axis is transposed into rows (run()).
constexpr std::int64_t kSmallInner = 8;
// Columns a strided-axis job covers: 8 vectors.
constexpr std::int64_t kColumnsPerJob = 64;

// One row of `count` contiguous values, m = max_k x_k, s = Σ_k e^(x_k − m):
//   Softmax     y_k = e^(x_k − m) / s      (e^(x_k − m) stored in the first pass over y)
//   LogSoftmax  y_k = (x_k − m) − log s
template <bool log>
REFOLD_TARGET_AVX2 void softmax_row(const float* x, float* y, std::int64_t count) {
  const std::int64_t body = count / 8 * 8;
  const __m256i tail = tail_mask(count - body);
  __m256 vmax = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t k = 0; k < body; k += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(x + k));
  float m = horizontal_max(vmax);
  for (std::int64_t k = body; k < count; ++k) m = std::max(m, x[k]);
  const __m256 vm = _mm256_set1_ps(m);
  __m256 vsum = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < body; k += 8) {
    const __m256 e = native::exp(_mm256_sub_ps(_mm256_loadu_ps(x + k), vm));
    if constexpr (!log) _mm256_storeu_ps(y + k, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  if (body < count) {
    const __m256 e =
        _mm256_and_ps(native::exp(_mm256_sub_ps(_mm256_maskload_ps(x + body, tail), vm)),
                      _mm256_castsi256_ps(tail));
    if constexpr (!log) _mm256_maskstore_ps(y + body, tail, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  const float s = horizontal_sum(vsum);
  if constexpr (log) {
    // (x − m) − log s, not x − (m + log s): m + log s rounds at m's magnitude.
    const __m256 log_sum = _mm256_set1_ps(std::log(s));
    for (std::int64_t k = 0; k < body; k += 8)
      _mm256_storeu_ps(y + k, _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + k), vm), log_sum));
    if (body < count)
      _mm256_maskstore_ps(
          y + body, tail,
          _mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + body, tail), vm), log_sum));
  } else {
    const __m256 inv = _mm256_set1_ps(1.0f / s);
    for (std::int64_t k = 0; k < body; k += 8)
      _mm256_storeu_ps(y + k, _mm256_mul_ps(_mm256_loadu_ps(y + k), inv));
    if (body < count)
      _mm256_maskstore_ps(y + body, tail, _mm256_mul_ps(_mm256_maskload_ps(y + body, tail), inv));
  }
}

// The same row over 16 lanes (AVX-512), for rows of at least kWideRow values: the exp is a long
// row's cost, 0.5 ns an element over 8 lanes on the Xeon (MobileViT's 256-token attention rows,
// 10 % of its time: 549 → 376 µs for 1 M values); short rows are the reductions' cost, which the
// 8-lane form does faster (16-value rows took 2× as long here).
constexpr std::int64_t kWideRow = 128;

template <bool log>
REFOLD_TARGET_AVX512 void softmax_row16(const float* x, float* y, std::int64_t count) {
  constexpr __mmask16 kAll = 0xFFFF;
  const std::int64_t body = count / 16 * 16;
  const auto tail = static_cast<__mmask16>((1u << (count - body)) - 1);
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 vmax = lowest;
  for (std::int64_t k = 0; k < body; k += 16)
    vmax = _mm512_maskz_max_ps(kAll, vmax, _mm512_loadu_ps(x + k));
  if (tail != 0)
    vmax = _mm512_maskz_max_ps(kAll, vmax, _mm512_mask_loadu_ps(lowest, tail, x + body));
  // The lanes reduced through memory (GCC 12 warns on the 512 → 256-bit extracts' pass-through).
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, vmax);
  const float m = *std::max_element(lanes, lanes + 16);
  const __m512 vm = _mm512_set1_ps(m);
  __m512 vsum = _mm512_setzero_ps();
  for (std::int64_t k = 0; k < body; k += 16) {
    const __m512 e = native::exp(_mm512_sub_ps(_mm512_loadu_ps(x + k), vm));
    if constexpr (!log) _mm512_storeu_ps(y + k, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  if (tail != 0) {
    const __m512 e = _mm512_maskz_mov_ps(
        tail, native::exp(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + body), vm)));
    if constexpr (!log) _mm512_mask_storeu_ps(y + body, tail, e);
    vsum = _mm512_add_ps(vsum, e);
  }
  _mm512_store_ps(lanes, vsum);
  float s = 0.0f;
  for (const float v : lanes) s += v;
  if constexpr (log) {
    // (x − m) − log s, as the 8-lane row.
    const __m512 log_sum = _mm512_set1_ps(std::log(s));
    for (std::int64_t k = 0; k < body; k += 16)
      _mm512_storeu_ps(y + k, _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + k), vm), log_sum));
    if (tail != 0)
      _mm512_mask_storeu_ps(
          y + body, tail,
          _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + body), vm), log_sum));
  } else {
    const __m512 inv = _mm512_set1_ps(1.0f / s);
    for (std::int64_t k = 0; k < body; k += 16)
      _mm512_storeu_ps(y + k, _mm512_mul_ps(_mm512_loadu_ps(y + k), inv));
    if (tail != 0)
      _mm512_mask_storeu_ps(y + body, tail,
                            _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, y + body), inv));
  }
}

// Up to 8 columns (lanes `lanes`) of `count` rows `stride` apart: the same math per column,
// the rows' values one vector each.
template <bool log>
REFOLD_TARGET_AVX2 void softmax_columns(const float* x, float* y, std::int64_t count,
                                        std::int64_t stride, std::int64_t width) {
  const __m256i lanes = tail_mask(width);
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  for (std::int64_t k = 0; k < count; ++k)
    m = _mm256_max_ps(m, _mm256_maskload_ps(x + k * stride, lanes));
  __m256 s = _mm256_setzero_ps();
  for (std::int64_t k = 0; k < count; ++k) {
    const __m256 e = native::exp(_mm256_sub_ps(_mm256_maskload_ps(x + k * stride, lanes), m));
    if constexpr (!log) _mm256_maskstore_ps(y + k * stride, lanes, e);
    s = _mm256_add_ps(s, e);
  }
  if constexpr (log) {
    alignas(32) float sums[8];
    _mm256_store_ps(sums, s);
    for (float& v : sums) v = std::log(v);
    const __m256 log_sum = _mm256_load_ps(sums);
    for (std::int64_t k = 0; k < count; ++k) {
      const __m256 d = _mm256_sub_ps(_mm256_maskload_ps(x + k * stride, lanes), m);
      _mm256_maskstore_ps(y + k * stride, lanes, _mm256_sub_ps(d, log_sum));
    }
  } else {
    const __m256 inv = _mm256_div_ps(_mm256_set1_ps(1.0f), s);
    for (std::int64_t k = 0; k < count; ++k)
      _mm256_maskstore_ps(y + k * stride, lanes,
                          _mm256_mul_ps(_mm256_maskload_ps(y + k * stride, lanes), inv));
  }
}

// y = x + c over one row (the addend's pass before the softmax runs on y in place).
REFOLD_TARGET_AVX2 void add_row(const float* x, const float* c, float* y, std::int64_t count) {
  const std::int64_t body = count / 8 * 8;
  for (std::int64_t k = 0; k < body; k += 8)
    _mm256_storeu_ps(y + k, _mm256_add_ps(_mm256_loadu_ps(x + k), _mm256_loadu_ps(c + k)));
  for (std::int64_t k = body; k < count; ++k) y[k] = x[k] + c[k];
}

// The addend c and where each row of X finds its row of c: c's row-major strides over X's row
// dims (X's sizes but the last), 0 along a dim c broadcasts; row o's offset is
// Σ_d index_d(o) · stride_d. A cursor walks the rows in order (an odometer, no division per row:
// a 49-value row of a window attention costs about as much as the divisions would).
class AddendRows {
 public:
  struct Cursor {
    Shape index;
    std::int64_t offset = 0;
  };

  AddendRows(const Shape& x_sizes, const Tensor& c) : data_(c.data<float>()), sizes_(x_sizes) {
    const Shape& c_sizes = c.sizes();
    sizes_.pop_back();
    strides_.assign(sizes_.size(), 0);
    const std::size_t lead = x_sizes.size() - c_sizes.size();
    std::int64_t stride = c_sizes.back();
    for (std::size_t d = sizes_.size(); d-- > lead;) {
      if (c_sizes[d - lead] > 1) strides_[d] = stride;
      stride *= c_sizes[d - lead];
    }
  }
  Cursor at(std::int64_t row) const {
    Cursor c{Shape(sizes_.size(), 0), 0};
    for (std::size_t d = sizes_.size(); d-- > 0;) {
      c.index[d] = row % sizes_[d];
      c.offset += c.index[d] * strides_[d];
      row /= sizes_[d];
    }
    return c;
  }
  const float* row(const Cursor& c) const { return data_ + c.offset; }
  void next(Cursor& c) const {
    for (std::size_t d = sizes_.size(); d-- > 0;) {
      c.offset += strides_[d];
      if (++c.index[d] < sizes_[d]) return;
      c.offset -= strides_[d] * sizes_[d];
      c.index[d] = 0;
    }
  }

 private:
  const float* data_;
  Shape sizes_, strides_;
};

// Rows per cursor: one division-based start per block.
constexpr std::int64_t kRowsPerBlock = 32;

// With `addend` (inner = 1 only): softmax(x + c) per row, the sum written to y and the row run
// in place (every softmax pass reads an element before it writes it).
void run(const float* in, float* out, std::int64_t outer, std::int64_t count, std::int64_t inner,
         bool log, const AddendRows* addend = nullptr) {
  const int threads = row_kernel_threads(outer * count * inner);
  const bool wide = count >= kWideRow && cpu_has_avx512() && max_vector_isa() == VectorIsa::Avx512;
  const auto row = wide ? (log ? softmax_row16<true> : softmax_row16<false>)
                        : (log ? softmax_row<true> : softmax_row<false>);
  if (inner > 1 && inner < kSmallInner) {
    // Fewer columns than a vector holds (channels_last attention scores, the heads innermost):
    // each [count][inner] slab is transposed into `inner` rows of a per-thread scratch, each row
    // runs the row kernel in place, and the rows are written back transposed. The column kernel
    // would fill half a vector or less and wait on one max and one sum chain per slab: CaiT's
    // 196 × 196 × 4 scores took 0.22 ms that way.
#pragma omp parallel num_threads(threads) if (threads > 1 && outer > 1)
    {
      std::vector<float> rows(static_cast<std::size_t>(count * inner));
#pragma omp for schedule(static)
      for (std::int64_t o = 0; o < outer; ++o) {
        const float* x = in + o * count * inner;
        float* y = out + o * count * inner;
        for (std::int64_t k = 0; k < count; ++k)
          for (std::int64_t i = 0; i < inner; ++i) rows[i * count + k] = x[k * inner + i];
        for (std::int64_t i = 0; i < inner; ++i) row(&rows[i * count], &rows[i * count], count);
        for (std::int64_t k = 0; k < count; ++k)
          for (std::int64_t i = 0; i < inner; ++i) y[k * inner + i] = rows[i * count + k];
      }
    }
    return;
  }
  if (inner == 1) {
    if (addend == nullptr) {
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && outer > 1)
      for (std::int64_t o = 0; o < outer; ++o) row(in + o * count, out + o * count, count);
      return;
    }
    const std::int64_t blocks = (outer + kRowsPerBlock - 1) / kRowsPerBlock;
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && blocks > 1)
    for (std::int64_t b = 0; b < blocks; ++b) {
      AddendRows::Cursor c = addend->at(b * kRowsPerBlock);
      for (std::int64_t o = b * kRowsPerBlock; o < std::min(outer, (b + 1) * kRowsPerBlock);
           ++o, addend->next(c)) {
        add_row(in + o * count, addend->row(c), out + o * count, count);
        row(out + o * count, out + o * count, count);
      }
    }
    return;
  }
  const std::int64_t chunks = (inner + kColumnsPerJob - 1) / kColumnsPerJob;
#pragma omp parallel for schedule(static) \
    num_threads(threads) if (threads > 1 && outer * chunks > 1)
  for (std::int64_t job = 0; job < outer * chunks; ++job) {
    const std::int64_t o = job / chunks;
    const std::int64_t end = std::min(inner, (job % chunks + 1) * kColumnsPerJob);
    for (std::int64_t i = job % chunks * kColumnsPerJob; i < end; i += 8) {
      const std::int64_t offset = o * count * inner + i;
      (log ? softmax_columns<true> : softmax_columns<false>)(in + offset, out + offset, count,
                                                             inner,
                                                             std::min<std::int64_t>(8, end - i));
    }
  }
}

}  // namespace

Tensor softmax(const Tensor& x, const Tensor& addend, std::int64_t axis, SoftmaxKind kind,
               bool coerce_2d, std::string* declined) {
  const char* op = kind == SoftmaxKind::LogSoftmax ? "LogSoftmax" : "Softmax";
  if (kind == SoftmaxKind::Hardmax) return decline("Hardmax", "no native Hardmax", declined);
  if (!cpu_has_avx2_fma()) return decline(op, "the CPU lacks AVX2/FMA", declined);
  if (!x.defined() || x.dtype() != DType::Float32) return decline(op, "X is not float32", declined);
  if (x.dim() == 0 || x.numel() == 0) return decline(op, "X is 0-d or has no elements", declined);
  const std::int64_t rank = x.dim();
  if (axis < -rank || axis >= rank + (coerce_2d ? 1 : 0))
    return decline(op, "the axis is out of range", declined);
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  // The reference's output layout: channels_last for a 4-d input that suggests it (per-axis
  // form), else contiguous; X must already be laid out so.
  const MemoryFormat format =
      !coerce_2d && rank == 4 && x.suggest_memory_format() == MemoryFormat::ChannelsLast
          ? MemoryFormat::ChannelsLast
          : MemoryFormat::Contiguous;
  if (!x.is_contiguous(format))
    return decline(op, "X is neither contiguous nor 4-d channels_last", declined);
  // Logical dims in memory order, outermost first.
  const Shape order = format == MemoryFormat::ChannelsLast ? Shape{0, 2, 3, 1} : [&] {
    Shape o(static_cast<std::size_t>(rank));
    for (std::int64_t d = 0; d < rank; ++d) o[static_cast<std::size_t>(d)] = d;
    return o;
  }();
  std::int64_t outer = 1, count = 1, inner = 1;
  bool before = true;
  for (const std::int64_t d : order) {
    if (d == a) before = false;
    const bool softmax_dim = coerce_2d ? d >= a : d == a;
    (softmax_dim ? count : before ? outer : inner) *= x.size(d);
  }
  const bool log = kind == SoftmaxKind::LogSoftmax;
  if (!addend.defined()) {
    Tensor y = empty(x.sizes(), {DType::Float32, format});
    run(x.data<float>(), y.data<float>(), outer, count, inner, log);
    return y;
  }
  if (coerce_2d || inner != 1 || format != MemoryFormat::Contiguous)
    return decline(op, "an addend where the softmax axis is not X's innermost", declined);
  if (addend.dtype() != DType::Float32 || !addend.is_contiguous())
    return decline(op, "an addend that is not row-major float32", declined);
  if (addend.dim() > rank) return decline(op, "an addend of more dims than X", declined);
  for (std::int64_t d = 1; d <= addend.dim(); ++d)
    if (addend.size(-d) != 1 && addend.size(-d) != x.size(-d))
      return decline(op, "an addend that does not broadcast to X", declined);
  if (addend.dim() == 0 || addend.size(-1) != count)
    return decline(op, "an addend broadcast along the softmax axis", declined);
  const AddendRows rows(x.sizes(), addend);
  Tensor y = empty(x.sizes(), DType::Float32);
  run(x.data<float>(), y.data<float>(), outer, count, inner, log, &rows);
  return y;
}

}  // namespace refold::native
