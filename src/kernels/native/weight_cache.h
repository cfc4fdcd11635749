// The packed weights of refold's own conv kernels (Winograd's U = G g Gᵀ, the direct conv's
// [block][tap][C_in][16] panels), cached process-wide like oneDNN's packed weights: keyed by
// (packing, version(), storage offset, dtype, sizes, strides), so writing to a weight (which bumps
// its version) makes the next call repack; least recently used first out beyond 512 MiB.
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "refold/tensor.h"

namespace refold::native {

// DirectBlocksOf8: the direct conv's panels 8 channels wide throughout (a grouped conv whose
// groups have an odd multiple of 8 output channels: no block may span two groups).
enum class Packing : std::int64_t {
  Winograd2x2 = 1,
  Direct = 2,
  Winograd4x4 = 3,
  DirectBlocksOf8 = 4
};

// The cached packing of `weight`, made by `pack(weight)` on a miss.
std::shared_ptr<const std::vector<float>> packed_weights(
    const Tensor& weight, Packing packing,
    const std::function<std::vector<float>(const Tensor&)>& pack);

struct CacheStats {
  std::uint64_t hits = 0;
  std::uint64_t packs = 0;  // weights packed (cache misses)
  std::size_t weights = 0;  // entries now cached
  std::size_t bytes = 0;
};
CacheStats cache_stats();
// Drops every cached packed weight and zeroes the counters.
void clear_cache();

}  // namespace refold::native
