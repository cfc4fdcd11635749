// The counters of one oneDNN op's primitive cache (batch norm, binary, concat, eltwise, inner
// product, pooling, reorder; conv2d.h has its own, with the weight cache's).
#pragma once

#include <cstddef>
#include <cstdint>

namespace refold::onednn {

struct PrimitiveStats {
  std::uint64_t runs = 0;  // calls executed by oneDNN (not declined)
  std::uint64_t primitive_hits = 0;
  std::uint64_t primitive_misses = 0;  // each miss creates a primitive (or records a decline)
  std::size_t primitives = 0;          // entries now cached
};

}  // namespace refold::onednn
