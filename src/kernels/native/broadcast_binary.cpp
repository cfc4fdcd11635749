// native/broadcast_binary.h.
#include "kernels/native/broadcast_binary.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/row_threads.h"
#include "kernels/reference/binary_checks.h"
#include "kernels/reference/typed_elements.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>
#include <omp.h>

#include "kernels/native/tail_mask.h"
#endif

namespace refold::native {
namespace {

// One dim of the output in x's memory order: its size and each operand's stride (v's 0 where it
// broadcasts).
struct Dim {
  std::int64_t size, x_stride, v_stride;
};

#if REFOLD_HAVE_X86_KERNELS

// x ∘ v, or v ∘ x when `reversed` (v came first in a Sub or Div).
template <BinaryKind Op, bool reversed>
REFOLD_TARGET_AVX2 inline __m256 apply(__m256 x, __m256 v) {
  const __m256 l = reversed ? v : x, r = reversed ? x : v;
  if constexpr (Op == BinaryKind::Add) return _mm256_add_ps(l, r);
  if constexpr (Op == BinaryKind::Sub) return _mm256_sub_ps(l, r);
  if constexpr (Op == BinaryKind::Mul) return _mm256_mul_ps(l, r);
  return _mm256_div_ps(l, r);
}

// y[i] = x[i] ∘ v[i·step], i < n: step 0 (one value), 1 (a row) or any other (a gather —
// MobileViTv2's NHWC value times its per-channel context vector read across an NCHW operand).
template <BinaryKind Op, bool reversed>
REFOLD_TARGET_AVX2 void row(const float* x, const float* v, std::int64_t step, float* y,
                            std::int64_t n) {
  std::int64_t i = 0;
  if (step != 0 && step != 1) {
    const auto s = static_cast<int>(step);
    const __m256i lanes =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(s));
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i, apply<Op, reversed>(_mm256_loadu_ps(x + i),
                                                  _mm256_i32gather_ps(v + i * step, lanes, 4)));
    if (i < n) {
      const __m256i m = tail_mask(n - i);
      const __m256 g = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), v + i * step, lanes,
                                                _mm256_castsi256_ps(m), 4);
      _mm256_maskstore_ps(y + i, m, apply<Op, reversed>(_mm256_maskload_ps(x + i, m), g));
    }
    return;
  }
  if (step == 0) {
    const __m256 s = _mm256_set1_ps(*v);
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(y + i, apply<Op, reversed>(_mm256_loadu_ps(x + i), s));
    if (i < n) {
      const __m256i m = tail_mask(n - i);
      _mm256_maskstore_ps(y + i, m, apply<Op, reversed>(_mm256_maskload_ps(x + i, m), s));
    }
    return;
  }
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, apply<Op, reversed>(_mm256_loadu_ps(x + i), _mm256_loadu_ps(v + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(
        y + i, m, apply<Op, reversed>(_mm256_maskload_ps(x + i, m), _mm256_maskload_ps(v + i, m)));
  }
}

// Elements [e0, e1) of the rows of the outer dims (outermost first), each `inner` long, in
// memory order: a range may start and end inside a row (one long row split over threads).
template <BinaryKind Op, bool reversed>
void elements(const float* x, const float* v, float* y, const std::vector<Dim>& outer,
              std::int64_t inner, std::int64_t v_step, std::int64_t e0, std::int64_t e1) {
  if (e0 >= e1) return;
  std::vector<std::int64_t> index(outer.size(), 0);
  std::int64_t xo = 0, vo = 0;
  for (std::size_t d = outer.size(), rest = static_cast<std::size_t>(e0 / inner); d-- > 0;) {
    index[d] = static_cast<std::int64_t>(rest) % outer[d].size;
    rest /= static_cast<std::size_t>(outer[d].size);
    xo += index[d] * outer[d].x_stride;
    vo += index[d] * outer[d].v_stride;
  }
  for (std::int64_t e = e0; e < e1;) {
    const std::int64_t c = e % inner, n = std::min(inner - c, e1 - e);
    row<Op, reversed>(x + xo + c, v + vo + c * v_step, v_step, y + xo + c, n);
    e += n;
    if (c + n < inner) break;                       // the range ended inside this row
    for (std::size_t d = outer.size(); d-- > 0;) {  // the next index, innermost first
      xo += outer[d].x_stride;
      vo += outer[d].v_stride;
      if (++index[d] < outer[d].size) break;
      xo -= outer[d].size * outer[d].x_stride;
      vo -= outer[d].size * outer[d].v_stride;
      index[d] = 0;
    }
  }
}

// Each thread one contiguous range of the elements, cut at multiples of 16 (64 bytes).
template <BinaryKind Op, bool reversed>
void run(const float* x, const float* v, float* y, const std::vector<Dim>& outer,
         std::int64_t inner, std::int64_t v_step, int threads) {
  std::int64_t total = inner;
  for (const Dim& d : outer) total *= d.size;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int team = threads > 1 ? omp_get_num_threads() : 1,
              me = threads > 1 ? omp_get_thread_num() : 0;
    auto cut = [&](int k) { return k == team ? total : total * k / team / 16 * 16; };
    elements<Op, reversed>(x, v, y, outer, inner, v_step, cut(me), cut(me + 1));
  }
}

template <BinaryKind Op>
void run(bool reversed, const float* x, const float* v, float* y, const std::vector<Dim>& outer,
         std::int64_t inner, std::int64_t v_step, int threads) {
  if (reversed)
    run<Op, true>(x, v, y, outer, inner, v_step, threads);
  else
    run<Op, false>(x, v, y, outer, inner, v_step, threads);
}

#endif

}  // namespace

Tensor broadcast_binary(BinaryKind op, const Tensor& a, const Tensor& b, std::string* declined) {
  constexpr const char* name = "broadcast_binary";
  if (!cpu_has_avx2_fma()) return decline(name, "needs AVX2 and FMA", declined);
  if (!a.defined() || !b.defined() || a.dtype() != DType::Float32 || b.dtype() != DType::Float32)
    return decline(name, "not two float32 operands", declined);
  // The output's shape: the operands' broadcast, which must be one of them.
  const std::size_t rank = static_cast<std::size_t>(std::max(a.dim(), b.dim()));
  Shape sizes(rank, 1);
  for (const Tensor* t : {&a, &b})
    for (std::size_t d = 0; d < static_cast<std::size_t>(t->dim()); ++d) {
      const std::int64_t s = t->size(static_cast<std::int64_t>(d));
      std::int64_t& o = sizes[rank - static_cast<std::size_t>(t->dim()) + d];
      if (s != 1 && o != 1 && s != o)
        return decline(name, "shapes that do not broadcast", declined);
      if (s != 1) o = s;
    }
  const Tensor* like = reference::detail::layout_operand(a, b, sizes);
  if (like == nullptr) {
    // Both operands broadcast (an outer product: FocalNet's [N, C, 1, 1] context times its
    // [N, 1, H, W] gate): a expanded to the output's shape, contiguous, then that loop — one more
    // pass, where the reference took 10× as long.
    const Shape strides = reference::detail::broadcast_strides(a, sizes);
    return broadcast_binary(op, a.as_strided(sizes, strides, a.storage_offset()).contiguous(), b,
                            declined);
  }
  const bool reversed = like == &b;
  const Tensor& x = *like;
  const Tensor& v = reversed ? a : b;
  if (x.numel() == 0) return decline(name, "no elements", declined);
  if (!x.is_non_overlapping_and_dense()) return decline(name, "x is not dense", declined);
  // The dims of size > 1 in x's memory order, outermost first, merged where both operands
  // step through them as one.
  std::vector<Dim> dims;
  for (std::size_t d = 0; d < rank; ++d) {
    if (sizes[d] == 1) continue;
    const std::int64_t vd =
        static_cast<std::int64_t>(d) - static_cast<std::int64_t>(rank) + v.dim();
    const std::int64_t vs = vd < 0 || v.size(vd) == 1 ? 0 : v.stride(vd);
    dims.push_back({sizes[d], x.stride(static_cast<std::int64_t>(d)), vs});
  }
  std::stable_sort(dims.begin(), dims.end(),
                   [](const Dim& p, const Dim& q) { return p.x_stride > q.x_stride; });
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty()) {
      Dim& m = merged.back();
      if (m.x_stride == d.size * d.x_stride && m.v_stride == d.size * d.v_stride) {
        m = {m.size * d.size, d.x_stride, d.v_stride};
        continue;
      }
    }
    merged.push_back(d);
  }
  const Dim inner = merged.empty() ? Dim{1, 1, 0} : merged.back();
  if (!merged.empty()) merged.pop_back();
  if (inner.x_stride != 1) return decline(name, "x's rows are not contiguous", declined);
  // A gather's lane offsets, 8 of them, are int32.
  if (inner.v_stride < 0 || inner.v_stride > (std::int64_t{1} << 27))
    return decline(name, "v is read with a stride a gather cannot take along the rows", declined);
#if REFOLD_HAVE_X86_KERNELS
  Tensor y = empty_strided(x.sizes(), x.strides(), DType::Float32);
  const float* xp = x.data<float>();
  const float* vp = v.data<float>();
  float* yp = y.data<float>();
  const int threads = row_kernel_threads(x.numel());
  switch (op) {
    case BinaryKind::Add:
      run<BinaryKind::Add>(false, xp, vp, yp, merged, inner.size, inner.v_stride, threads);
      break;
    case BinaryKind::Sub:
      run<BinaryKind::Sub>(reversed, xp, vp, yp, merged, inner.size, inner.v_stride, threads);
      break;
    case BinaryKind::Mul:
      run<BinaryKind::Mul>(false, xp, vp, yp, merged, inner.size, inner.v_stride, threads);
      break;
    case BinaryKind::Div:
      run<BinaryKind::Div>(reversed, xp, vp, yp, merged, inner.size, inner.v_stride, threads);
      break;
  }
  return y;
#else
  return decline(name, "built without x86 kernels", declined);
#endif
}

}  // namespace refold::native
