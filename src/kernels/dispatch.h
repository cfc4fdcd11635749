// The one dispatch rule every op follows (functional:: and the graph ops of src/ops/): try the
// implementations fastest first; each declines with a reason or runs; the reference, last,
// never declines. REFOLD_VERBOSE=1 prints which ran and why the others declined.
#pragma once

#include <string>
#include <string_view>

#include "kernels/verbose.h"
#include "refold/tensor.h"

namespace refold {

// Runs `fast(&reason)`; when it declines (an undefined result), runs `reference()`.
// `earlier` is what faster implementations tried before said, for the verbose line; `fast_name`
// names the fast implementation there ("onednn", "native").
template <typename Fast, typename Reference>
Tensor fastest_first(std::string_view op, Fast&& fast, Reference&& reference,
                     std::string_view earlier = {}, std::string_view fast_name = "onednn") {
  const std::string before = earlier.empty() ? std::string() : std::string(earlier) + "; ";
  std::string declined;
  Tensor out = fast(&declined);
  if (out.defined()) {
    log_dispatch(op, fast_name, earlier);
    return out;
  }
  log_dispatch(op, "reference", before + std::string(fast_name) + " declined: " + declined);
  return reference();
}

}  // namespace refold
