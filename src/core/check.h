// Internal helpers to throw refold::Error with a formatted message.
//   REFOLD_CHECK(stride > 0, "stride ({}) must be positive", stride);
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "refold/error.h"

namespace refold {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace refold

#define REFOLD_CHECK(condition, ...)               \
  do {                                             \
    if (!(condition)) ::refold::fail(__VA_ARGS__); \
  } while (false)
