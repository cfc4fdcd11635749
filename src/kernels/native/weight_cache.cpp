// weight_cache.h: one LRU map under one mutex.
#include "kernels/native/weight_cache.h"

#include <mutex>

#include "kernels/lru_cache.h"

namespace refold::native {

namespace {

struct WeightCache {
  std::mutex mutex;
  LruCache<const std::vector<float>> entries{std::size_t{512} << 20};
  CacheStats stats;
};

WeightCache& weight_cache() {
  static WeightCache cache;
  return cache;
}

}  // namespace

std::shared_ptr<const std::vector<float>> packed_weights(
    const Tensor& weight, Packing packing,
    const std::function<std::vector<float>(const Tensor&)>& pack) {
  // Never the data pointer: finding a packed weight reads none of the plain one's bytes.
  CacheKey key{static_cast<std::int64_t>(packing), static_cast<std::int64_t>(weight.version()),
               weight.storage_offset(), static_cast<std::int64_t>(weight.dtype())};
  for (std::int64_t d = 0; d < weight.dim(); ++d) {
    key.push_back(weight.size(d));
    key.push_back(weight.stride(d));
  }
  WeightCache& cache = weight_cache();
  {
    const std::lock_guard lock(cache.mutex);
    if (auto found = cache.entries.find(key)) {
      ++cache.stats.hits;
      return found;
    }
  }
  // Packed outside the lock; two threads missing at once both pack, and one insert wins.
  auto packed = std::make_shared<const std::vector<float>>(pack(weight));
  const std::lock_guard lock(cache.mutex);
  ++cache.stats.packs;
  cache.entries.insert(key, packed, packed->size() * sizeof(float));
  return packed;
}

CacheStats cache_stats() {
  WeightCache& cache = weight_cache();
  const std::lock_guard lock(cache.mutex);
  CacheStats stats = cache.stats;
  stats.weights = cache.entries.size();
  stats.bytes = cache.entries.cost();
  return stats;
}

void clear_cache() {
  WeightCache& cache = weight_cache();
  const std::lock_guard lock(cache.mutex);
  cache.entries.clear();
  cache.stats = {};
}

}  // namespace refold::native
