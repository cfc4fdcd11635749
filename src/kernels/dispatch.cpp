#include "kernels/dispatch.h"

#include "core/stand_in.h"

namespace refold {

Tensor dispatch(std::string_view op, std::initializer_list<Implementation> fast,
                FunctionRef<Tensor()> reference) {
  // A stand-in run asks only for the output's shape (core/stand_in.h): refold's own kernels give
  // it fastest; oneDNN's are skipped, they would build and cache a primitive for a graph about to
  // be rewritten.
  const bool stand_in = StandInRun::active();
  // "a declined: why; b declined: why", for the log line — joined only when it is printed: the
  // dispatch runs per node and call.
  const bool logged = verbose();
  std::string declines;
  for (const Implementation& candidate : fast) {
    if (stand_in && candidate.name.starts_with("onednn")) continue;
    std::string declined;
    Tensor out = candidate.run(&declined);
    if (out.defined()) {
      log_dispatch(op, candidate.name, declines);
      return out;
    }
    if (!logged) continue;
    if (!declines.empty()) declines += "; ";
    declines.append(candidate.name).append(" declined: ").append(declined);
  }
  log_dispatch(op, "reference", fast.size() == 0 ? "its only implementation" : declines);
  return reference();
}

}  // namespace refold
