// How a native kernel says "not me" (kernels/dispatch.h): the reason goes to *declined and the
// result is an undefined tensor; with declined == nullptr it throws
// "<op>: native declined: <reason>" instead.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "core/check.h"
#include "refold/tensor.h"

namespace refold::native {

inline Tensor decline(std::string_view op, std::string reason, std::string* declined) {
  if (declined == nullptr) fail("{}: native declined: {}", op, reason);
  *declined = std::move(reason);
  return {};
}

}  // namespace refold::native
