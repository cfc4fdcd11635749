// oneDNN matmul over broadcast batch dims: src [..., M, K], weights [..., K, N], dst [..., M, N],
// each with its own (possibly size-1) batch dims; src and weights with their own strides.
#include "kernels/onednn/matmul.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"

namespace refold::onednn {
namespace {

struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::matmul primitive;
  dnnl::memory::desc src, weights, dst;
};

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

// `sizes` with leading 1s up to `rank`.
dnnl::memory::dims extended(const Shape& sizes, std::size_t rank) {
  dnnl::memory::dims dims(rank - sizes.size(), 1);
  dims.insert(dims.end(), sizes.begin(), sizes.end());
  return dims;
}

// Row-major strides of `dims`.
dnnl::memory::dims row_major(const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (std::size_t d = dims.size() - 1; d-- > 0;) strides[d] = strides[d + 1] * dims[d + 1];
  return strides;
}

// t's strides for `dims` (its sizes with leading 1s): its own where a dim has more than one
// element, row-major ones where it has one (any stride addresses it; oneDNN gets tidy ones).
dnnl::memory::dims strides_for(const Tensor& t, const dnnl::memory::dims& dims) {
  dnnl::memory::dims strides = row_major(dims);
  const std::size_t lead = dims.size() - static_cast<std::size_t>(t.dim());
  for (std::size_t d = lead; d < dims.size(); ++d)
    if (dims[d] > 1) strides[d] = t.strides()[d - lead];
  return strides;
}

}  // namespace

bool matmul_reads(const Tensor& t) {
  if (t.dim() < 2) return false;
  for (std::int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) <= 0) return false;
  const std::int64_t rows = t.size(-2), cols = t.size(-1);
  const bool row_major = cols == 1 || (t.stride(-1) == 1 && (rows == 1 || t.stride(-2) >= cols));
  const bool col_major = rows == 1 || (t.stride(-2) == 1 && (cols == 1 || t.stride(-1) >= rows));
  return row_major || col_major;
}

namespace {

// The product's dims, or the reason oneDNN cannot take the problem.
struct Problem {
  dnnl::memory::dims a, b, y;  // a's and b's sizes with leading 1s, the product's sizes
  std::string declined;
};

Problem problem_of(const Tensor& a, const Tensor& b) {
  Problem p;
  if (!a.defined() || !b.defined() || a.dtype() != DType::Float32 || b.dtype() != DType::Float32)
    return {{}, {}, {}, "oneDNN matmul runs float32 only"};
  const std::size_t rank = static_cast<std::size_t>(std::max(a.dim(), b.dim()));
  if (a.dim() < 2 || b.dim() < 2 || rank < 3 || rank > DNNL_MAX_NDIMS)
    return {{}, {}, {}, "not batched matrices of 3 to 12 dims"};
  if (a.numel() == 0 || b.numel() == 0) return {{}, {}, {}, "a zero-sized dimension"};
  if (!matmul_reads(a) || !matmul_reads(b))
    return {{}, {}, {}, "an operand's matrices are neither row- nor column-major"};
  p.a = extended(a.sizes(), rank);
  p.b = extended(b.sizes(), rank);
  if (p.a[rank - 1] != p.b[rank - 2]) return {{}, {}, {}, "inner dims the caller reports"};
  p.y.resize(rank);
  for (std::size_t d = 0; d + 2 < rank; ++d) {
    if (p.a[d] != p.b[d] && p.a[d] != 1 && p.b[d] != 1)
      return {{}, {}, {}, "batch dims the caller reports"};
    p.y[d] = std::max(p.a[d], p.b[d]);
  }
  p.y[rank - 2] = p.a[rank - 2];
  p.y[rank - 1] = p.b[rank - 1];
  return p;
}

// Runs the product of a problem oneDNN takes into dst (the product's sizes, strides `ys`).
bool run(const Tensor& a, const Tensor& b, float alpha, const Problem& p,
         const dnnl::memory::dims& ys, void* dst_data, std::string* declined) {
  constexpr std::string_view op = "matmul";
  const int threads = apply_num_threads();
  const dnnl::memory::dims as = strides_for(a, p.a), bs = strides_for(b, p.b);
  CacheKey key(p.a.begin(), p.a.end());
  for (const auto* dims : {&as, &p.b, &bs, &ys}) key.insert(key.end(), dims->begin(), dims->end());
  key.push_back(threads);
  std::int64_t alpha_bits = 0;
  std::memcpy(&alpha_bits, &alpha, sizeof alpha);
  key.push_back(alpha_bits);
  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    made->declined = try_build(op, "matmul", [&] {
      using dt = dnnl::memory::data_type;
      made->src = dnnl::memory::desc(p.a, dt::f32, as);
      made->weights = dnnl::memory::desc(p.b, dt::f32, bs);
      made->dst = dnnl::memory::desc(p.y, dt::f32, ys);
      const dnnl::matmul::desc desc(made->src, made->weights, made->dst);
      dnnl::primitive_attr attr = user_scratchpad();
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      made->primitive = dnnl::matmul(dnnl::matmul::primitive_desc(desc, attr, cpu_engine()));
    });
    return made;
  });
  if (!prim->declined.empty()) {
    decline(op, prim->declined, declined);
    return false;
  }
  cache().execute(op, [&](dnnl::stream& stream) {
    // oneDNN only reads the operands; const_cast avoids Tensor's writable data_ptr(), which
    // would bump their versions.
    const dnnl::memory src(prim->src, cpu_engine(), const_cast<void*>(a.data_ptr()));
    const dnnl::memory w(prim->weights, cpu_engine(), const_cast<void*>(b.data_ptr()));
    const dnnl::memory dst(prim->dst, cpu_engine(), dst_data);
    execute(prim->primitive, stream,
            {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}});
  });
  return true;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, float alpha, std::string* declined) {
  const Problem p = problem_of(a, b);
  if (!p.declined.empty()) return decline("matmul", p.declined, declined);
  Tensor output = empty(Shape(p.y.begin(), p.y.end()), DType::Float32);
  if (!run(a, b, alpha, p, row_major(p.y), output.data_ptr(), declined)) return Tensor();
  return output;
}

bool matmul_into(const Tensor& a, const Tensor& b, float alpha, Tensor& dst,
                 std::string* declined) {
  const Problem p = problem_of(a, b);
  const auto refuse = [&](const std::string& why) {
    decline("matmul", why, declined);
    return false;
  };
  if (!p.declined.empty()) return refuse(p.declined);
  if (!dst.defined() || dst.dtype() != DType::Float32 ||
      Shape(p.y.begin(), p.y.end()) != dst.sizes())
    return refuse("dst is not the product's float32 [batch..., M, N]");
  for (std::int64_t d = 0; d < dst.dim(); ++d)
    if (dst.size(d) > 1 && dst.stride(d) <= 0) return refuse("dst has a non-positive stride");
  if (dst.size(-1) > 1 && dst.stride(-1) != 1) return refuse("dst's rows are not contiguous");
  return run(a, b, alpha, p, strides_for(dst, p.y), dst.data_ptr(), declined);
}

PrimitiveStats matmul_stats() { return cache().stats(); }

}  // namespace refold::onednn
