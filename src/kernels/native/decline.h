// A native kernel's "no": the reason goes to the dispatch (kernels/dispatch.h), which logs it
// and runs the reference. Called without a place for the reason, declining is an error.
#pragma once

#include <string>
#include <string_view>

#include "core/check.h"
#include "refold/tensor.h"

namespace refold::native {

inline Tensor decline(std::string_view op, std::string reason, std::string* declined) {
  if (declined == nullptr) fail("{}: native declined: {}", op, reason);
  *declined = std::move(reason);
  return {};
}

}  // namespace refold::native
