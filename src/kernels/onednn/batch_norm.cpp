// oneDNN batch norm inference: the reference's validation, then one batch_normalization
// primitive on the input's own strides with the per-channel statistics as float32 vectors.
#include "kernels/onednn/batch_norm.h"

#include <bit>
#include <cmath>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/onednn/engine.h"
#include "kernels/onednn/lru_cache.h"
#include "kernels/onednn/threads.h"

namespace refold::onednn {
namespace {

constexpr const char* kOp = "batch_norm";

// The reference's checks and messages (reference/batch_norm.cpp).
void check_float(const Tensor& t, const char* name) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", kOp, name);
  REFOLD_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::BFloat16,
               "{}: {} has dtype {}; only float32 and bfloat16 are supported", kOp, name,
               dtype_name(t.dtype()));
}

// A per-channel parameter: 1-D, C long, the input's dtype; its values in float32 (oneDNN's
// statistics and scale/shift are float32 for every source dtype).
std::vector<float> channel_values(const Tensor& param, const char* name, std::int64_t channels,
                                  DType dtype) {
  check_float(param, name);
  REFOLD_CHECK(param.dtype() == dtype, "{}: {} has dtype {} but the input has {}", kOp, name,
               dtype_name(param.dtype()), dtype_name(dtype));
  REFOLD_CHECK(param.dim() == 1 && param.size(0) == channels,
               "{}: {} has shape [{}], expected [{}] (one value per channel)", kOp, name,
               fmt::join(param.sizes(), ", "), channels);
  return param.to_vector();
}

struct Primitive {
  std::string declined;  // non-empty: oneDNN cannot take this problem (cached, not retried)
  dnnl::batch_normalization_forward primitive;
  dnnl::memory::desc stats_desc;  // [C] float32, for mean, variance, scale and shift
};

struct Caches {
  std::mutex mutex;
  LruCache<Primitive> primitives{1024};
  BatchNormStats stats;
};

Caches& caches() {
  static Caches c;
  return c;
}

Tensor decline(std::string reason, std::string* declined) {
  if (declined == nullptr) fail("{}: oneDNN declined: {}", kOp, reason);
  *declined = std::move(reason);
  return {};
}

}  // namespace

Tensor batch_norm(const Tensor& input, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight, const Tensor& bias, double eps, std::string* declined) {
  check_float(input, "input");
  REFOLD_CHECK(input.dim() >= 2, "{}: input must have at least 2 dimensions (N, C, ...), got [{}]",
               kOp, fmt::join(input.sizes(), ", "));
  REFOLD_CHECK(eps >= 0 && std::isfinite(eps), "{}: eps ({}) must be finite and non-negative", kOp,
               eps);
  const std::int64_t channels = input.size(1);
  const DType dtype = input.dtype();
  const std::vector<float> mean = channel_values(running_mean, "running_mean", channels, dtype);
  const std::vector<float> var = channel_values(running_var, "running_var", channels, dtype);
  // affine=False: weight 1, bias 0.
  const std::vector<float> gamma = weight.defined()
                                       ? channel_values(weight, "weight", channels, dtype)
                                       : std::vector<float>(mean.size(), 1.0f);
  const std::vector<float> beta = bias.defined() ? channel_values(bias, "bias", channels, dtype)
                                                 : std::vector<float>(mean.size(), 0.0f);
  // The reference's checks, in double as it does them: a negative variance or var + eps == 0
  // is an error, not a decline. A NaN variance is data and propagates.
  const auto feps = static_cast<float>(eps);
  bool zero_in_float = false;
  for (std::size_t c = 0; c < var.size(); ++c) {
    const double v = var[c];
    REFOLD_CHECK(!(v < 0), "{}: running_var[{}] = {} is negative", kOp, c, v);
    REFOLD_CHECK(v + eps != 0, "{}: running_var[{}] + eps is 0 (division by zero)", kOp, c);
    zero_in_float = zero_in_float || var[c] + feps == 0.0f;
  }

  if (!input.is_non_overlapping_and_dense())
    return decline(fmt::format("input {} (strides [{}]) is not dense; oneDNN batch norm takes "
                               "dense tensors only",
                               input.description(), fmt::join(input.strides(), ", ")),
                   declined);
  if (input.numel() == 0) return decline("a zero-sized dimension", declined);
  if (input.dim() > 5)
    return decline(fmt::format("input has {} dims; oneDNN batch norm takes 2 to 5", input.dim()),
                   declined);
  if (dtype == DType::BFloat16 && !bf16_supported())
    return decline("bfloat16 batch_norm needs avx512_bf16, which this CPU lacks", declined);
  if (zero_in_float)
    return decline(fmt::format("eps ({}) is 0 in float32 and a running_var is 0", eps), declined);
  const int threads = apply_num_threads();

  CacheKey key;
  key.reserve(4 + 2 * input.sizes().size());
  key.insert(key.end(), {static_cast<std::int64_t>(dtype),
                         static_cast<std::int64_t>(std::bit_cast<std::uint32_t>(feps)), threads,
                         static_cast<std::int64_t>(input.dim())});
  key.insert(key.end(), input.sizes().begin(), input.sizes().end());
  key.insert(key.end(), input.strides().begin(), input.strides().end());

  const dnnl::memory::desc desc = call(kOp, [&] {
    return dnnl::memory::desc(
        dnnl::memory::dims(input.sizes().begin(), input.sizes().end()),
        dtype == DType::Float32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16,
        dnnl::memory::dims(input.strides().begin(), input.strides().end()));
  });

  Caches& c = caches();
  std::shared_ptr<Primitive> prim;
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    prim = c.primitives.find(key);
    if (prim != nullptr) ++c.stats.primitive_hits;
  }
  if (prim == nullptr) {
    // Created outside the lock; two threads racing on one new problem each build one, and the
    // second insert replaces the first — harmless.
    prim = std::make_shared<Primitive>();
    try {
      using flags = dnnl::normalization_flags;
      const dnnl::batch_normalization_forward::desc d(
          dnnl::prop_kind::forward_inference, desc, feps,
          flags::use_global_stats | flags::use_scale | flags::use_shift);
      const dnnl::batch_normalization_forward::primitive_desc pd(d, cpu_engine());
      prim->primitive = dnnl::batch_normalization_forward(pd);
      prim->stats_desc = pd.mean_desc();
    } catch (const dnnl::error& e) {
      if (e.status != dnnl_unimplemented)
        fail("{}: oneDNN failed in {} (status {})", kOp, e.what(), status_name(e.status));
      prim->declined = "oneDNN has no batch norm implementation for this problem";
    }
    const std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.primitive_misses;
    c.primitives.insert(key, prim, 1);
  }
  if (!prim->declined.empty()) return decline(prim->declined, declined);

  Tensor output = empty_like(input, {dtype, MemoryFormat::Preserve});
  REFOLD_CHECK(output.strides() == input.strides(),
               "{}: internal: output strides [{}] differ from the input's [{}]", kOp,
               fmt::join(output.strides(), ", "), fmt::join(input.strides(), ", "));
  call(kOp, [&] {
    const dnnl::engine& engine = cpu_engine();
    // oneDNN only reads these; const_cast avoids Tensor's writable data_ptr(), which would bump
    // the input's version.
    const auto stat = [&](const std::vector<float>& v) {
      return dnnl::memory(prim->stats_desc, engine, const_cast<float*>(v.data()));
    };
    const dnnl::memory src(desc, engine, const_cast<void*>(input.data_ptr()));
    const dnnl::memory dst(desc, engine, output.data_ptr());
    dnnl::stream& stream = cpu_stream();
    prim->primitive.execute(stream, {{DNNL_ARG_SRC, src},
                                     {DNNL_ARG_DST, dst},
                                     {DNNL_ARG_MEAN, stat(mean)},
                                     {DNNL_ARG_VARIANCE, stat(var)},
                                     {DNNL_ARG_SCALE, stat(gamma)},
                                     {DNNL_ARG_SHIFT, stat(beta)}});
    stream.wait();
  });
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    ++c.stats.runs;
  }
  return output;
}

BatchNormStats batch_norm_stats() {
  Caches& c = caches();
  const std::lock_guard<std::mutex> lock(c.mutex);
  BatchNormStats s = c.stats;
  s.primitives = c.primitives.size();
  return s;
}

void clear_batch_norm_cache() {
  Caches& c = caches();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.primitives.clear();
  c.stats = {};
}

}  // namespace refold::onednn
