// The one CPU engine refold's oneDNN kernels run on, and the single place where oneDNN's C++
// exceptions become refold::Error (oneDNN's own pattern: C status codes turned into exceptions
// in one wrapper; here one step further, into the project's one exception type).
// Only src/kernels/onednn/ includes this header (and with it dnnl.hpp).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/check.h"

namespace refold::onednn {

// The process-wide CPU engine.
const dnnl::engine& cpu_engine();
// The calling thread's stream on cpu_engine(). One per thread: a stream is cheap on CPU, and
// executing two primitives on one stream from two threads at once is not allowed.
dnnl::stream& cpu_stream();

// Scratchpads. oneDNN's library-managed scratchpad is one buffer shared by every primitive
// (Debian builds oneDNN with DNNL_ENABLE_CONCURRENT_EXEC=OFF): two threads running the same
// primitive then overwrite each other's temporaries and get wrong results. So every primitive is
// created with user_scratchpad() and runs through execute(), which passes a scratchpad private
// to the calling thread (thread_scratchpad: one buffer per thread, grown to the largest size
// asked so far).
dnnl::primitive_attr user_scratchpad();
dnnl::memory thread_scratchpad(const dnnl::memory::desc& desc);
// primitive.execute(stream, args) with the primitive's scratchpad from thread_scratchpad().
void execute(const dnnl::primitive& primitive, dnnl::stream& stream,
             std::unordered_map<int, dnnl::memory> args);

// "unimplemented", "invalid_arguments", ... for a dnnl_status_t.
std::string_view status_name(dnnl_status_t status);

// Runs fn() and rethrows any dnnl::error as refold::Error:
//   conv2d: oneDNN failed in <what> (status invalid_arguments)
template <typename Fn>
decltype(auto) call(std::string_view op, Fn&& fn) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const dnnl::error& e) {
    fail("{}: oneDNN failed in {} (status {})", op, e.what(), status_name(e.status));
  }
}

}  // namespace refold::onednn
