// Overflow-checked size arithmetic (docs/reliability.md G3). Every N·C·H·W, offset and byte count
// that comes from user input goes through these.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "core/check.h"

namespace refold {

inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  REFOLD_CHECK(!__builtin_mul_overflow(a, b, &r), "{}: size overflow ({} * {})", what, a, b);
  return r;
}

inline std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  REFOLD_CHECK(!__builtin_add_overflow(a, b, &r), "{}: size overflow ({} + {})", what, a, b);
  return r;
}

// Product of sizes; every size must be >= 0.
inline std::int64_t checked_numel(std::span<const std::int64_t> sizes, std::string_view what) {
  std::int64_t n = 1;
  for (std::int64_t s : sizes) {
    REFOLD_CHECK(s >= 0, "{}: negative size {} in shape [{}]", what, s, fmt::join(sizes, ", "));
    n = checked_mul(n, s, what);
  }
  return n;
}

}  // namespace refold
