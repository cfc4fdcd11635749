// core/block_cache.h.
#include "core/block_cache.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

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

// Large blocks: pages of their own, given back to the OS when released (see the header).
void* map_block(std::size_t size, std::size_t alignment) {
  if (kSanitized || alignment > kPage) return std::aligned_alloc(alignment, size);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void unmap_block(void* block, std::size_t size, std::size_t alignment) {
  if (kSanitized || alignment > kPage) {
    std::free(block);
  } else {
    munmap(block, size);
  }
}

struct Kept {
  void* block;
  std::size_t alignment;
};

struct Cache {
  std::mutex mutex;
  std::map<std::size_t, std::vector<Kept>> free;  // rounded size → kept blocks
  std::size_t kept = 0;                           // bytes kept
  std::size_t in_use = 0, peak_in_use = 0;        // large blocks taken and not given back
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

// Releases kept blocks, largest class first, until at most `keep` bytes are kept. Under the lock.
void release_down_to(Cache& c, std::size_t keep) {
  while (c.kept > keep && !c.free.empty()) {
    auto last = std::prev(c.free.end());
    std::vector<Kept>& blocks = last->second;
    while (!blocks.empty() && c.kept > keep) {
      unmap_block(blocks.back().block, last->first, blocks.back().alignment);
      blocks.pop_back();
      c.kept -= last->first;
    }
    if (blocks.empty()) c.free.erase(last);
  }
}

}  // namespace

std::size_t block_size(std::size_t bytes, std::size_t alignment) {
  if (bytes < kMinCachedBytes) {
    const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    return rounded < alignment ? alignment : rounded;
  }
  // The size class: a quarter of the largest power of two ≤ bytes (≥ 16 KiB, so a multiple of
  // the page and of any alignment up to it), times the fewest quarters that hold `bytes`.
  std::size_t octave = kMinCachedBytes;
  while (octave <= bytes / 2) octave *= 2;
  const std::size_t quarter = std::max(octave / 4, alignment);
  return (bytes + quarter - 1) / quarter * quarter;
}

void* take_block(std::size_t bytes, std::size_t alignment) {
  const std::size_t size = block_size(bytes, alignment);
  if (size < kMinCachedBytes) return std::aligned_alloc(alignment, size);
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.in_use += size;
  c.peak_in_use = std::max(c.peak_in_use, c.in_use);
  if (auto it = c.free.find(size); it != c.free.end()) {
    for (auto k = it->second.rbegin(); k != it->second.rend(); ++k) {
      if (k->alignment < alignment) continue;
      void* block = k->block;
      it->second.erase(std::next(k).base());
      if (it->second.empty()) c.free.erase(it);
      c.kept -= size;
      return block;
    }
  }
  // A miss: what is in use, plus what stays kept, stays under the high-water mark.
  release_down_to(c, c.peak_in_use - c.in_use);
  void* block = map_block(size, alignment);
  if (block == nullptr) c.in_use -= size;
  return block;
}

void give_block(void* block, std::size_t bytes, std::size_t alignment) {
  const std::size_t size = block_size(bytes, alignment);
  if (size < kMinCachedBytes) {
    std::free(block);
    return;
  }
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  c.in_use -= size;
  if (caching_enabled() && c.kept + size <= kMaxCachedBytes) {
    c.free[size].push_back({block, alignment});
    c.kept += size;
    return;
  }
  unmap_block(block, size, alignment);
}

std::size_t cached_block_bytes() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  return c.kept;
}

void release_cached_blocks() {
  Cache& c = cache();
  const std::lock_guard<std::mutex> lock(c.mutex);
  release_down_to(c, 0);
  c.peak_in_use = c.in_use;
}

}  // namespace refold::detail
