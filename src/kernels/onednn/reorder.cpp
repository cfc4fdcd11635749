// oneDNN reorder between two strided descriptions of one tensor: the input's own strides and
// the destination's — those of `format` (NCHW: [CHW, HW, W, 1]; NHWC: [HWC, 1, WC, C]) for
// reorder, any for reorder_into.
#include "kernels/onednn/reorder.h"

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
  dnnl::reorder primitive;
  dnnl::memory::desc src, dst;
};

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

dnnl::memory::desc desc_of(const Shape& sizes, const Shape& strides, DType dtype) {
  return dnnl::memory::desc(dnnl::memory::dims(sizes.begin(), sizes.end()), data_type_of(dtype),
                            dnnl::memory::dims(strides.begin(), strides.end()));
}

}  // namespace

bool reorder_into(const Tensor& input, Tensor& dst, std::string* declined) {
  constexpr std::string_view op = "reorder";
  auto refuse = [&](std::string reason) {
    decline(op, std::move(reason), declined);
    return false;
  };
  if (!input.defined() || !dst.defined()) return refuse("an undefined tensor");
  if (input.sizes() != dst.sizes())
    return refuse(fmt::format("input {} and destination {} differ in size", input.description(),
                              dst.description()));
  const DType dtype = input.dtype();
  if (dtype != dst.dtype() || (dtype != DType::Float32 && dtype != DType::BFloat16))
    return refuse(fmt::format("dtypes {} → {}: float32 or bfloat16 only", dtype_name(dtype),
                              dtype_name(dst.dtype())));
  if (input.dim() < 1 || input.dim() > DNNL_MAX_NDIMS)
    return refuse(fmt::format("{} dims: 1 to oneDNN's {} only", input.dim(), DNNL_MAX_NDIMS));
  if (input.numel() == 0) return refuse("a zero-sized dimension");
  const int threads = apply_num_threads();

  CacheKey key{static_cast<std::int64_t>(dtype), threads};
  for (const Shape* s : {&input.sizes(), &input.strides(), &dst.strides()})
    key.insert(key.end(), s->begin(), s->end());
  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    made->declined = try_build(op, "reorder", [&] {
      made->src = desc_of(input.sizes(), input.strides(), dtype);
      made->dst = desc_of(dst.sizes(), dst.strides(), dtype);
      made->primitive = dnnl::reorder(dnnl::reorder::primitive_desc(
          cpu_engine(), made->src, cpu_engine(), made->dst, user_scratchpad()));
    });
    return made;
  });
  if (!prim->declined.empty()) return refuse(prim->declined);

  cache().execute(op, [&](dnnl::stream& stream) {
    // oneDNN only reads the source (const_cast: no version bump).
    dnnl::memory src(prim->src, cpu_engine(), const_cast<void*>(input.data_ptr()));
    dnnl::memory to(prim->dst, cpu_engine(), dst.data_ptr());
    execute(prim->primitive, stream, {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, to}});
  });
  return true;
}

Tensor reorder(const Tensor& input, MemoryFormat format, std::string* declined) {
  constexpr std::string_view op = "reorder";
  if (!input.defined()) return decline(op, "input is undefined", declined);
  if (format == MemoryFormat::Preserve)
    return decline(op, "'preserve' is not a target layout", declined);
  if (input.dim() != 4)
    return decline(op, fmt::format("input {} is not 4-d", input.description()), declined);
  if (!input.is_non_overlapping_and_dense())
    return decline(op, fmt::format("input {} is not dense", input.description()), declined);
  Tensor output = empty(input.sizes(), {input.dtype(), format});
  return reorder_into(input, output, declined) ? output : Tensor{};
}

PrimitiveStats reorder_stats() { return cache().stats(); }

}  // namespace refold::onednn
