// core/block_cache.h.
#include "core/block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/stand_in.h"

namespace refold::detail {
namespace {

constexpr std::size_t kPage = 4096;

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

struct Cache {
  std::mutex mutex;
  std::map<std::size_t, std::vector<void*>> free;  // rounded size → kept blocks (maybe none)
  std::size_t bytes = 0;
  // Blocks handed out for a smaller size class than their own: block → its own size.
  std::unordered_map<void*, std::size_t> larger;
  // Stand-in blocks: never kept; mapped (mmap) unless the C allocator took them. The count is
  // read without the lock, so that a free outside the optimizer does not take it.
  std::unordered_map<void*, bool> stand_ins;  // block → mapped
  std::atomic<std::size_t> stand_in_count{0};
};

// Never destroyed: storages freed by static destructors at exit may still return blocks.
Cache& cache() {
  static Cache* c = new Cache;
  return *c;
}

bool caching_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("REFOLD_CACHE_BLOCKS");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

}  // namespace

std::size_t block_size(std::size_t bytes, std::size_t alignment) {
  if (bytes < kMinCachedBytes) {
    const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return rounded < alignment ? alignment : rounded;
  }
  // The size class: a quarter of the largest power of two ≤ bytes (≥ 256 bytes; from 16 KiB on
  // ≥ 4 KiB, so whole pages; at least the alignment), times the fewest quarters that hold
  // `bytes`.
  std::size_t octave = kMinCachedBytes;
  while (octave <= bytes / 2) octave *= 2;
  const std::size_t quarter = std::max(octave / 4, alignment);
  return (bytes + quarter - 1) / quarter * quarter;
}

// A stand-in run's block: pages of its own where large enough (sanitizer builds keep the C
// allocator, whose redzones catch overruns).
void* take_stand_in_block(std::size_t size, std::size_t alignment) {
  const bool mapped = !kSanitized && size >= kMinMappedBytes && alignment <= kPage;
  void* block = nullptr;
  if (mapped) {
    block = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (block == MAP_FAILED) return nullptr;
  } else {
    block = std::aligned_alloc(alignment, size);
    if (block == nullptr) return nullptr;
  }
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.stand_ins.emplace(block, mapped);
  c.stand_in_count.store(c.stand_ins.size(), std::memory_order_release);
  return block;
}

void* take_block(std::size_t bytes, std::size_t alignment) {
  const std::size_t size = block_size(bytes, alignment);
  if (StandInRun::active()) return take_stand_in_block(size, alignment);
  if (size >= kMinCachedBytes && caching_enabled()) {
    Cache& c = cache();
    const std::lock_guard<std::mutex> lock(c.mutex);
    // The smallest kept block of the class or a larger one, up to kLargestFit times the class.
    for (auto it = c.free.lower_bound(size); it != c.free.end() && it->first <= kLargestFit * size;
         ++it) {
      std::vector<void*>& blocks = it->second;
      const auto aligned = std::find_if(blocks.rbegin(), blocks.rend(), [&](void* b) {
        return reinterpret_cast<std::uintptr_t>(b) % alignment == 0;
      });
      if (aligned == blocks.rend()) continue;
      void* block = *aligned;
      blocks.erase(std::next(aligned).base());
      c.bytes -= it->first;
      if (it->first != size) c.larger.emplace(block, it->first);
      return block;  // an emptied class stays: its next block is kept without allocating
    }
  }
  return std::aligned_alloc(alignment, size);
}

void give_block(void* block, std::size_t bytes, std::size_t alignment, Keep keep) {
  const std::size_t size = block_size(bytes, alignment);
  Cache& c = cache();
  // A block taken in a stand-in run was counted before its tensor could reach this thread.
  if (c.stand_in_count.load(std::memory_order_acquire) != 0) {
    const std::lock_guard<std::mutex> lock(c.mutex);
    if (const auto it = c.stand_ins.find(block); it != c.stand_ins.end()) {
      const bool mapped = it->second;
      c.stand_ins.erase(it);
      c.stand_in_count.store(c.stand_ins.size(), std::memory_order_release);
      if (mapped) {
        munmap(block, size);
      } else {
        std::free(block);
      }
      return;
    }
  }
  if (size >= kMinCachedBytes && caching_enabled()) {
    const std::lock_guard<std::mutex> lock(c.mutex);
    std::size_t own = size;
    if (const auto it = c.larger.find(block); it != c.larger.end()) {
      own = it->second;
      c.larger.erase(it);
    }
    if (keep == Keep::Yes && c.bytes + own <= kMaxCachedBytes) {
      c.free[own].push_back(block);
      c.bytes += own;
      return;
    }
  }
  std::free(block);
}

std::size_t cached_block_bytes() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  return c.bytes;
}

std::size_t stand_in_blocks() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  return c.stand_ins.size();
}

void release_cached_blocks() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  for (auto& [size, blocks] : c.free)
    for (void* block : blocks) std::free(block);
  c.free.clear();
  c.bytes = 0;
}

}  // namespace refold::detail
