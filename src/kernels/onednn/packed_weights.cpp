// packed_weights.h: one LRU map of packed copies under one mutex.
#include "kernels/onednn/packed_weights.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "core/held_weights.h"
#include "core/tensor_impl.h"
#include "kernels/lru_cache.h"
#include "kernels/onednn/engine.h"

namespace refold::onednn::detail {
namespace {

// A weight reordered into a primitive's format (memory owned by oneDNN); it can stand in for
// the plain weight (core/held_weights.h): the reverse reorder rebuilds the plain bytes exactly.
struct PackedWeight final : PackedCopy {
  dnnl::memory memory;
  dnnl::memory::desc plain;  // the weight as it was read
  void unpack(std::byte* to) const override;
};

// Copies `from` into `to`, each in its own format (a oneDNN reorder: packing and unpacking).
void reorder(std::string_view op, const dnnl::memory& from, const dnnl::memory& to) {
  call(op, [&] {
    const dnnl::reorder reorder(dnnl::reorder::primitive_desc(
        cpu_engine(), from.get_desc(), cpu_engine(), to.get_desc(), user_scratchpad()));
    execute(reorder, cpu_stream(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
    cpu_stream().wait();
  });
}

void PackedWeight::unpack(std::byte* to) const {
  reorder("weight rebuild", memory,
          call("weight rebuild", [&] { return dnnl::memory(plain, cpu_engine(), to); }));
}

struct Cache {
  std::mutex mutex;
  LruCache<PackedWeight> weights{std::size_t{1} << 30};
  // Weight keys (no primitive) asked about: 8192 of them, about 1 MB, more than a model's
  // constants between two sightings of one (a computed operand adds one key per run).
  LruCache<bool> seen{std::size_t{1} << 13};
  PackedWeightStats stats;
};

// Never destroyed: cached oneDNN memory must not outlive the engine at exit.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

// (version, view) of a weight: what its packed copies depend on, besides the primitive.
CacheKey weight_key(const Tensor& weight) {
  CacheKey key{static_cast<std::int64_t>(weight.version()), weight.storage_offset(),
               static_cast<std::int64_t>(weight.dtype())};
  key.insert(key.end(), weight.sizes().begin(), weight.sizes().end());
  key.insert(key.end(), weight.strides().begin(), weight.strides().end());
  return key;
}

std::shared_ptr<PackedWeight> pack(std::string_view op, const Tensor& weight, const Tensor& bytes,
                                   const dnnl::memory::desc& user,
                                   const dnnl::memory::desc& packed) {
  auto copy = std::make_shared<PackedWeight>();
  call(op, [&] { copy->memory = dnnl::memory(packed, cpu_engine()); });
  reorder(
      op,
      call(op,
           [&] { return dnnl::memory(user, cpu_engine(), const_cast<void*>(bytes.data_ptr())); }),
      copy->memory);
  copy->plain = user;
  if (bytes.is_same(weight)) refold::detail::offer_packed(weight, copy);
  return copy;
}

}  // namespace

std::uint64_t new_primitive_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

bool seen_before(const Tensor& weight) {
  const CacheKey key = weight_key(weight);
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  if (c.seen.find(key) != nullptr) return true;
  c.seen.insert(key, std::make_shared<bool>(true), 1);
  return false;
}

dnnl::memory weight_memory(std::string_view op, std::uint64_t primitive_id, const Tensor& weight,
                           const Tensor& bytes, const dnnl::memory::desc& user,
                           const dnnl::memory::desc& packed) {
  Cache& c = cache();
  if (user == packed) {
    {
      const std::lock_guard<std::mutex> lock(c.mutex);
      ++c.stats.direct;
    }
    return call(
        op, [&] { return dnnl::memory(user, cpu_engine(), const_cast<void*>(bytes.data_ptr())); });
  }
  CacheKey key = weight_key(weight);
  key.push_back(static_cast<std::int64_t>(primitive_id));
  {
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (std::shared_ptr<PackedWeight> found = c.weights.find(key)) {
      ++c.stats.hits;
      return found->memory;
    }
  }
  std::shared_ptr<PackedWeight> made = pack(op, weight, bytes, user, packed);
  const std::lock_guard<std::mutex> lock(c.mutex);
  ++c.stats.packs;
  c.weights.insert(key, made, packed.get_size());
  return made->memory;
}

PackedWeightStats packed_weight_stats() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  PackedWeightStats s = c.stats;
  s.weights = c.weights.size();
  s.bytes = c.weights.cost();
  return s;
}

void clear_packed_weights() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.weights.clear();
  c.seen.clear();
  c.stats = {};
}

void set_packed_weight_capacity(std::size_t bytes) {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.weights.set_capacity(bytes);
}

}  // namespace refold::onednn::detail
