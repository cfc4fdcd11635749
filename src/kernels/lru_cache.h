// A least-recently-used map with a capacity in "cost" units (1 per primitive, bytes per packed
// weight), shared by the backends' primitive and packed-weight caches. Not thread-safe: the
// owner locks. Values are shared_ptrs so that an entry evicted by
// one thread stays alive while another thread still runs with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace refold {

// Cache keys are flat lists of integers (sizes, options, pointers, versions).
using CacheKey = std::vector<std::int64_t>;

struct CacheKeyHash {
  std::size_t operator()(const CacheKey& key) const {
    // FNV-1a over the 64-bit words, then a final avalanche (splitmix64's finaliser).
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::int64_t v : key) h = (h ^ static_cast<std::uint64_t>(v)) * 0x100000001b3ull;
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return static_cast<std::size_t>(h);
  }
};

template <typename Value>
class LruCache {
 public:
  explicit LruCache(std::size_t capacity) : capacity_(capacity) {}

  // The value under `key` (now the most recently used), or null.
  std::shared_ptr<Value> find(const CacheKey& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    entries_.splice(entries_.begin(), entries_, it->second);
    return it->second->value;
  }

  // Inserts (or replaces) `key`, then evicts least recently used entries until the total cost
  // fits the capacity. An entry costlier than the whole capacity is not kept.
  void insert(const CacheKey& key, std::shared_ptr<Value> value, std::size_t cost) {
    erase(key);
    entries_.push_front(Entry{key, std::move(value), cost});
    index_.emplace(key, entries_.begin());
    cost_ += cost;
    shrink();
  }

  void set_capacity(std::size_t capacity) {
    capacity_ = capacity;
    shrink();
  }
  void clear() {
    index_.clear();
    entries_.clear();
    cost_ = 0;
  }
  std::size_t size() const { return entries_.size(); }
  std::size_t cost() const { return cost_; }
  std::size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    CacheKey key;
    std::shared_ptr<Value> value;
    std::size_t cost;
  };

  void erase(const CacheKey& key) {
    const auto it = index_.find(key);
    if (it == index_.end()) return;
    cost_ -= it->second->cost;
    entries_.erase(it->second);
    index_.erase(it);
  }

  void shrink() {
    while (!entries_.empty() && cost_ > capacity_) {
      cost_ -= entries_.back().cost;
      index_.erase(entries_.back().key);
      entries_.pop_back();
    }
  }

  std::size_t capacity_;
  std::size_t cost_ = 0;
  std::list<Entry> entries_;  // most recently used first
  std::unordered_map<CacheKey, typename std::list<Entry>::iterator, CacheKeyHash> index_;
};

}  // namespace refold
