// oneDNN concat along one dim: each source described by its own (dense) strides, the
// destination by the output's; cached per problem.
#include "kernels/onednn/concat.h"

#include <memory>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"
#include "kernels/reference/tensor_ops.h"

namespace refold::onednn {
namespace {

struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::concat primitive;
  std::vector<dnnl::memory::desc> srcs;
  dnnl::memory::desc dst;
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

Tensor cat(const std::vector<Tensor>& inputs, std::int64_t dim, std::string* declined) {
  constexpr std::string_view op = "cat";
  const std::string check = "arguments the reference will check";
  // Invalid calls are declined so that the reference rejects them with its messages.
  if (inputs.empty() || !inputs[0].defined() || inputs[0].dim() == 0)
    return decline(op, check, declined);
  const Tensor& first = inputs[0];
  const std::int64_t rank = first.dim();
  const std::int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank) return decline(op, check, declined);
  const DType dtype = first.dtype();
  if (dtype != DType::Float32 && dtype != DType::BFloat16) return decline(op, check, declined);
  Shape sizes = first.sizes();
  sizes[static_cast<std::size_t>(d)] = 0;
  for (const Tensor& t : inputs) {
    if (!t.defined() || t.dtype() != dtype || t.dim() != rank) return decline(op, check, declined);
    for (std::int64_t i = 0; i < rank; ++i)
      if (i != d && t.size(i) != first.size(i)) return decline(op, check, declined);
    sizes[static_cast<std::size_t>(d)] += t.size(d);
  }
  // The reference's output layout; every input must already be in it.
  const MemoryFormat format = reference::cat_output_format(inputs);
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].numel() == 0) return decline(op, "a zero-sized input", declined);
    if (!inputs[k].is_contiguous(format))
      return decline(
          op,
          fmt::format("input {} {} is not contiguous in the output's layout ({})", k,
                      inputs[k].description(),
                      format == MemoryFormat::ChannelsLast ? "channels_last" : "contiguous"),
          declined);
  }
  if (rank > DNNL_MAX_NDIMS)
    return decline(op, fmt::format("{} dims, more than oneDNN's {}", rank, DNNL_MAX_NDIMS),
                   declined);
  const int threads = apply_num_threads();

  Tensor output = empty(sizes, {dtype, format});
  CacheKey key{static_cast<std::int64_t>(dtype), static_cast<std::int64_t>(format), d, rank,
               threads};
  for (const Tensor& t : inputs) key.insert(key.end(), t.sizes().begin(), t.sizes().end());

  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    made->declined = try_build(op, "concat", [&] {
      for (const Tensor& t : inputs) made->srcs.push_back(desc_of(t.sizes(), t.strides(), dtype));
      made->dst = desc_of(output.sizes(), output.strides(), dtype);
      made->primitive = dnnl::concat(dnnl::concat::primitive_desc(
          made->dst, static_cast<int>(d), made->srcs, cpu_engine(), user_scratchpad()));
    });
    return made;
  });
  if (!prim->declined.empty()) return decline(op, prim->declined, declined);

  cache().execute(op, [&](dnnl::stream& stream) {
    std::unordered_map<int, dnnl::memory> args;
    for (std::size_t k = 0; k < inputs.size(); ++k)
      // oneDNN only reads the sources (const_cast: no version bump).
      args.emplace(
          DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k),
          dnnl::memory(prim->srcs[k], cpu_engine(), const_cast<void*>(inputs[k].data_ptr())));
    args.emplace(DNNL_ARG_DST, dnnl::memory(prim->dst, cpu_engine(), output.data_ptr()));
    execute(prim->primitive, stream, std::move(args));
  });
  return output;
}

PrimitiveStats concat_stats() { return cache().stats(); }

}  // namespace refold::onednn
