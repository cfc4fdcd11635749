// oneDNN batch norm inference: the reference's validation, then one batch_normalization
// primitive on the input's own strides with the per-channel statistics as float32 vectors.
#include "kernels/onednn/batch_norm.h"

#include <bit>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/primitive_cache.h"
#include "kernels/onednn/threads.h"
#include "kernels/reference/batch_norm_checks.h"

namespace refold::onednn {
namespace {

constexpr const char* kOp = "batch_norm";

struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::batch_normalization_forward primitive;
  dnnl::memory::desc stats_desc;  // [C] float32, for mean, variance, scale and shift
};

PrimitiveCache<Primitive, PrimitiveStats>& cache() {
  static PrimitiveCache<Primitive, PrimitiveStats> c(1024);
  return c;
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps, std::string* declined) {
  // The reference's checks and messages; oneDNN's statistics and scale/shift are float32 for
  // every source dtype.
  const reference::detail::BatchNormChannels checked =
      reference::detail::check_batch_norm(input, running_mean, running_var, weight, bias, eps);
  const DType dtype = input.dtype();
  const std::vector<float>& mean = checked.mean;
  const std::vector<float>& var = checked.var;
  const std::vector<float>& gamma = checked.weight;
  const std::vector<float>& beta = checked.bias;
  // var + eps is nonzero in double (checked) but can still be 0 in float32: a decline.
  const auto feps = static_cast<float>(eps);
  bool zero_in_float = false;
  for (float v : var) zero_in_float = zero_in_float || v + feps == 0.0f;

  if (!input.is_non_overlapping_and_dense())
    return decline(kOp,
                   fmt::format("input {} (strides [{}]) is not dense; oneDNN batch norm takes "
                               "dense tensors only",
                               input.description(), fmt::join(input.strides(), ", ")),
                   declined);
  if (input.numel() == 0) return decline(kOp, "a zero-sized dimension", declined);
  if (input.dim() > 5)
    return decline(kOp,
                   fmt::format("input has {} dims; oneDNN batch norm takes 2 to 5", input.dim()),
                   declined);
  if (dtype == DType::BFloat16 && !bf16_supported())
    return decline(kOp, "bfloat16 batch_norm needs avx512_bf16, which this CPU lacks", declined);
  if (zero_in_float)
    return decline(kOp, fmt::format("eps ({}) is 0 in float32 and a running_var is 0", eps),
                   declined);
  const int threads = apply_num_threads();

  CacheKey key;
  key.reserve(4 + 2 * input.sizes().size());
  key.insert(key.end(), {static_cast<std::int64_t>(dtype),
                         static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(feps)), threads,
                         static_cast<std::int64_t>(input.dim())});
  key.insert(key.end(), input.sizes().begin(), input.sizes().end());
  key.insert(key.end(), input.strides().begin(), input.strides().end());

  const dnnl::memory::desc desc = call(kOp, [&] {
    return dnnl::memory::desc(dnnl::memory::dims(input.sizes().begin(), input.sizes().end()),
                              data_type_of(dtype),
                              dnnl::memory::dims(input.strides().begin(), input.strides().end()));
  });

  const std::shared_ptr<Primitive> prim = cache().find_or_make(key, [&] {
    auto made = std::make_shared<Primitive>();
    made->declined = try_build(kOp, "batch norm", [&] {
      using flags = dnnl::normalization_flags;
      const dnnl::batch_normalization_forward::desc d(
          dnnl::prop_kind::forward_inference, desc, feps,
          flags::use_global_stats | flags::use_scale | flags::use_shift);
      const dnnl::batch_normalization_forward::primitive_desc pd(d, user_scratchpad(),
                                                                 cpu_engine());
      made->primitive = dnnl::batch_normalization_forward(pd);
      made->stats_desc = pd.mean_desc();
    });
    return made;
  });
  if (!prim->declined.empty()) return decline(kOp, prim->declined, declined);

  Tensor output = empty_like(input, {dtype, MemoryFormat::Preserve});
  REFOLD_CHECK(output.strides() == input.strides(),
               "{}: internal: output strides [{}] differ from the input's [{}]", kOp,
               fmt::join(output.strides(), ", "), fmt::join(input.strides(), ", "));
  cache().execute(kOp, [&](dnnl::stream& stream) {
    const dnnl::engine& engine = cpu_engine();
    // oneDNN only reads these; const_cast avoids Tensor's writable data_ptr(), which would bump
    // the input's version.
    const auto stat = [&](const std::vector<float>& v) {
      return dnnl::memory(prim->stats_desc, engine, const_cast<float*>(v.data()));
    };
    const dnnl::memory src(desc, engine, const_cast<void*>(input.data_ptr()));
    const dnnl::memory dst(desc, engine, output.data_ptr());
    execute(prim->primitive, stream,
            {{DNNL_ARG_SRC, src},
             {DNNL_ARG_DST, dst},
             {DNNL_ARG_MEAN, stat(mean)},
             {DNNL_ARG_VARIANCE, stat(var)},
             {DNNL_ARG_SCALE, stat(gamma)},
             {DNNL_ARG_SHIFT, stat(beta)}});
  });
  return output;
}

PrimitiveStats batch_norm_stats() { return cache().stats(); }

void clear_batch_norm_cache() { cache().clear(); }

}  // namespace refold::onednn
