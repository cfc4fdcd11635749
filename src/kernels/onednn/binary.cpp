// oneDNN binary add/mul: the full-shape operand as src0, the other (rank-extended with leading
// 1s) as src1, each described by its own strides; cached per problem.
#include "kernels/onednn/binary.h"

#include <algorithm>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"
#include "kernels/reference/binary_checks.h"

namespace refold::onednn {
namespace {

// `t`'s dims and strides at `rank` (≥ 1) dims: leading 1s added, whose strides (never used to
// step) are the extent of the whole tensor, as an outer dim of a dense tensor would have.
struct Desc {
  Shape dims, strides;
};
Desc extended(const Tensor& t, std::size_t rank) {
  std::int64_t extent = 1;
  for (std::size_t d = 0; d < t.sizes().size(); ++d)
    extent = std::max(extent, t.sizes()[d] * t.strides()[d]);
  Desc desc{Shape(rank, 1), Shape(rank, extent)};
  const std::size_t lead = rank - t.sizes().size();
  std::copy(t.sizes().begin(), t.sizes().end(), desc.dims.begin() + lead);
  std::copy(t.strides().begin(), t.strides().end(), desc.strides.begin() + lead);
  return desc;
}

struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::binary primitive;
};

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

dnnl::memory::desc memory_desc(const Desc& d, DType dtype) {
  return dnnl::memory::desc(dnnl::memory::dims(d.dims.begin(), d.dims.end()), data_type_of(dtype),
                            dnnl::memory::dims(d.strides.begin(), d.strides.end()));
}

}  // namespace

std::string_view binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "add";
    case BinaryOp::Mul:
      return "mul";
    case BinaryOp::Sub:
      return "sub";
    case BinaryOp::Div:
      return "div";
  }
  return "unknown";
}

namespace {

dnnl::algorithm binary_algorithm(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return dnnl::algorithm::binary_add;
    case BinaryOp::Mul:
      return dnnl::algorithm::binary_mul;
    case BinaryOp::Sub:
      return dnnl::algorithm::binary_sub;
    case BinaryOp::Div:
      return dnnl::algorithm::binary_div;
  }
  return dnnl::algorithm::undef;
}

}  // namespace

Tensor binary(BinaryOp op, const Tensor& a, const Tensor& b, std::string* declined) {
  const std::string_view name = binary_name(op);
  // The reference's checks and messages.
  const Shape sizes = reference::detail::check_binary(a, b, name);
  const DType dtype = a.dtype();

  // src0 carries the output's shape and layout (reference::detail::layout_operand's); only
  // src1 may broadcast.
  const Tensor* like = reference::detail::layout_operand(a, b, sizes);
  const bool a_full = like == &a;
  if (like == nullptr)
    return decline(
        name,
        fmt::format("neither [{}] nor [{}] has the output's shape [{}]; oneDNN "
                    "broadcasts only its second operand",
                    fmt::join(a.sizes(), ", "), fmt::join(b.sizes(), ", "), fmt::join(sizes, ", ")),
        declined);
  // Only add and mul commute.
  if (!a_full && (op == BinaryOp::Sub || op == BinaryOp::Div))
    return decline(name,
                   fmt::format("the output takes its second operand's layout ([{}] and [{}] to "
                               "[{}]); oneDNN's src0 gives it, and {} does not commute",
                               fmt::join(a.sizes(), ", "), fmt::join(b.sizes(), ", "),
                               fmt::join(sizes, ", "), name),
                   declined);
  const Tensor& src0 = a_full ? a : b;
  const Tensor& src1 = a_full ? b : a;
  for (const Tensor* t : {&src0, &src1})
    if (!t->is_non_overlapping_and_dense())
      return decline(name,
                     fmt::format("operand {} (strides [{}]) is not dense; oneDNN binary takes "
                                 "dense operands only",
                                 t->description(), fmt::join(t->strides(), ", ")),
                     declined);
  if (src0.numel() == 0) return decline(name, "a zero-sized dimension", declined);
  if (sizes.size() > DNNL_MAX_NDIMS)
    return decline(name,
                   fmt::format("{} dims, more than oneDNN's {}", sizes.size(), DNNL_MAX_NDIMS),
                   declined);
  if (dtype == DType::BFloat16 && !bf16_supported())
    return decline(name, fmt::format("bfloat16 {} needs avx512_bf16, which this CPU lacks", name),
                   declined);
  const int threads = apply_num_threads();

  // A 0-d output is one element: oneDNN sees [1].
  const std::size_t rank = std::max<std::size_t>(sizes.size(), 1);
  const Desc d0 = extended(src0, rank), d1 = extended(src1, rank);

  CacheKey key;
  key.reserve(4 + 4 * rank);
  key.insert(key.end(), {static_cast<std::int64_t>(op), static_cast<std::int64_t>(dtype), threads,
                         static_cast<std::int64_t>(rank)});
  for (const Shape* s : {&d0.dims, &d0.strides, &d1.dims, &d1.strides})
    key.insert(key.end(), s->begin(), s->end());

  const dnnl::memory::desc md0 = call(name, [&] { return memory_desc(d0, dtype); });
  const dnnl::memory::desc md1 = call(name, [&] { return memory_desc(d1, dtype); });

  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    std::string impl;
    made->declined = try_build(name, "binary", [&] {
      const dnnl::binary::desc desc(binary_algorithm(op), md0, md1, md0);
      const dnnl::binary::primitive_desc pd(desc, user_scratchpad(), cpu_engine());
      impl = pd.impl_info_str();
      made->primitive = dnnl::binary(pd);
    });
    // oneDNN's reference binary (a row-scalar broadcast of a 4-d tensor) ran at 0.1 GB/s;
    // refold's broadcast loop (native/broadcast_binary.h) takes float32 there.
    if (made->declined.empty() && dtype == DType::Float32 && impl.rfind("ref", 0) == 0)
      made->declined =
          fmt::format("oneDNN has only its reference implementation ({}) for it", impl);
    return made;
  });
  if (!prim->declined.empty()) return decline(name, prim->declined, declined);

  Tensor output = empty_like(src0, {dtype, MemoryFormat::Preserve});
  REFOLD_CHECK(output.strides() == src0.strides(),
               "{}: internal: output strides [{}] differ from the operand's [{}]", name,
               fmt::join(output.strides(), ", "), fmt::join(src0.strides(), ", "));
  cache().execute(name, [&](dnnl::stream& stream) {
    // oneDNN only reads the sources; const_cast avoids Tensor's writable data_ptr(), which
    // would bump their versions.
    const dnnl::memory m0(md0, cpu_engine(), const_cast<void*>(src0.data_ptr()));
    const dnnl::memory m1(md1, cpu_engine(), const_cast<void*>(src1.data_ptr()));
    const dnnl::memory dst(md0, cpu_engine(), output.data_ptr());
    execute(prim->primitive, stream,
            {{DNNL_ARG_SRC_0, m0}, {DNNL_ARG_SRC_1, m1}, {DNNL_ARG_DST, dst}});
  });
  return output;
}

PrimitiveStats binary_stats() { return cache().stats(); }

void clear_binary_cache() { cache().clear(); }

}  // namespace refold::onednn
