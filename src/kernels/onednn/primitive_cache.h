// What the oneDNN op backends (batch norm, binary, eltwise, pooling) share around their
// primitives: the per-op cache with its counters, turning "oneDNN has no implementation" into a
// decline, and running a primitive on the calling thread's stream.
// Only src/kernels/onednn/ includes this header (and with it dnnl.hpp).
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/lru_cache.h"
#include "kernels/onednn/engine.h"
#include "refold/dtype.h"
#include "refold/tensor.h"

namespace refold::onednn {

// A decline: with declined == nullptr it throws "<op>: oneDNN declined: <reason>"; otherwise
// the reason goes to *declined and the result is an undefined tensor.
inline Tensor decline(std::string_view op, std::string reason, std::string* declined) {
  if (declined == nullptr) fail("{}: oneDNN declined: {}", op, reason);
  *declined = std::move(reason);
  return {};
}

// oneDNN's element type for a float32 or bfloat16 tensor (the only dtypes the ops take).
inline dnnl::memory::data_type data_type_of(DType dtype) {
  return dtype == DType::Float32 ? dnnl::memory::data_type::f32 : dnnl::memory::data_type::bf16;
}

// Runs build(); returns "" when it succeeded, or the decline reason when oneDNN has no
// implementation (dnnl_unimplemented) for `what` ("batch norm", "pooling", ...). Any other
// oneDNN error is a refold::Error: "<op>: oneDNN failed in <what> (status <name>)".
template <typename Build>
std::string try_build(std::string_view op, std::string_view what, Build&& build) {
  try {
    std::forward<Build>(build)();
    return {};
  } catch (const dnnl::error& e) {
    if (e.status != dnnl_unimplemented)
      fail("{}: oneDNN failed in {} (status {})", op, e.what(), status_name(e.status));
    return fmt::format("oneDNN has no {} implementation for this problem", what);
  }
}

// One op's primitives, keyed by problem, with its counters. `Primitive` has a
// `std::string declined` (non-empty: oneDNN cannot take the problem; cached, not retried);
// `Stats` has runs, primitive_hits, primitive_misses and primitives.
template <typename Primitive, typename Stats>
class PrimitiveCache {
 public:
  explicit PrimitiveCache(std::size_t capacity) : primitives_(capacity) {}

  // The primitive cached under `key`, or make()'s (a shared_ptr<Primitive>), then cached.
  // make() runs outside the lock (it can take milliseconds); two threads racing on one new
  // problem each build one, and the second insert replaces the first — harmless.
  template <typename Make>
  std::shared_ptr<Primitive> find_or_make(const CacheKey& key, Make&& make) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      std::shared_ptr<Primitive> prim = primitives_.find(key);
      if (prim != nullptr) {
        ++stats_.primitive_hits;
        return prim;
      }
    }
    std::shared_ptr<Primitive> prim = std::forward<Make>(make)();
    const std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.primitive_misses;
    primitives_.insert(key, prim, 1);
    return prim;
  }

  // Runs run(stream) on the calling thread's stream, waits for it, and counts the run; any
  // dnnl::error becomes refold::Error under `op`.
  template <typename Run>
  void execute(std::string_view op, Run&& run) {
    call(op, [&] {
      dnnl::stream& stream = cpu_stream();
      run(stream);
      stream.wait();
    });
    const std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.runs;
  }

  Stats stats() {
    const std::lock_guard<std::mutex> lock(mutex_);
    Stats s = stats_;
    s.primitives = primitives_.size();
    return s;
  }

  // Drops every cached primitive and zeroes the counters.
  void clear() {
    const std::lock_guard<std::mutex> lock(mutex_);
    primitives_.clear();
    stats_ = {};
  }

 private:
  std::mutex mutex_;
  LruCache<Primitive> primitives_;
  Stats stats_;
};

}  // namespace refold::onednn
