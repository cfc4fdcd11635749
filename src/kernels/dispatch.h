// The one dispatch every op follows — functional:: (the nn face), the graph ops of src/ops/ and
// the fused nodes of src/passes/: the arguments are validated once, by the caller; the
// implementations are tried in order, fastest first; each declines with a reason or runs; the
// reference, last, never declines. REFOLD_VERBOSE=1 prints which ran and why each earlier one
// declined:
//   refold: conv2d -> onednn brg:avx2 (winograd declined: stride 2; native direct declined: …)
//   refold: flatten -> reference (its only implementation)
// A graph op that calls the reference kernels directly (it has no other implementation) is
// reported by the executor in the same form (graph/plan.cpp), so every node names what ran.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "kernels/verbose.h"
#include "refold/tensor.h"

namespace refold {

// A non-owning reference to a callable, for the dispatch's candidates: no allocation per call
// (the 10,000-node chain of bench/graph_scale_bench.cpp pays the dispatch per node). It must
// not outlive the callable; the dispatch's candidates are lambdas that live for the whole call.
template <typename Signature>
class FunctionRef;

template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, FunctionRef>>>
  FunctionRef(F&& f)  // NOLINT(google-explicit-constructor): a lambda converts implicitly
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

// One implementation the dispatch may try: its name in the log ("winograd", "native direct",
// "onednn", "native"), and the call that runs it, or declines — an undefined result, with the
// reason in *declined. A name beginning "onednn" says it builds and caches oneDNN primitives: a
// stand-in run (core/stand_in.h) skips it.
struct Implementation {
  std::string_view name;
  FunctionRef<Tensor(std::string* declined)> run;
};

// Runs the first of `fast` that does not decline, else `reference()`; logs the choice with every
// earlier decline. `fast` may be empty: the reference is then the op's only implementation.
Tensor dispatch(std::string_view op, std::initializer_list<Implementation> fast,
                FunctionRef<Tensor()> reference);

}  // namespace refold
