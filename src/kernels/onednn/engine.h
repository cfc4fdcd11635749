// The one CPU engine refold's oneDNN kernels run on, and the single place where oneDNN's C++
// exceptions become refold::Error (oneDNN's own pattern: C status codes turned into exceptions
// in one wrapper; here one step further, into the project's one exception type).
// Only src/kernels/onednn/ includes this header (and with it dnnl.hpp).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <cstdint>
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
// The calling thread's scratchpad buffer, at least `bytes` long (null for 0).
void* thread_scratchpad(std::size_t bytes);
// primitive.execute(stream, args) with the primitive's scratchpad from thread_scratchpad().
void execute(const dnnl::primitive& primitive, dnnl::stream& stream,
             std::unordered_map<int, dnnl::memory> args);

// The arguments of one primitive on the calling thread, kept from run to run: each memory object
// is made once and then only pointed at the run's data (dnnl::memory::set_data_handle), the way
// oneDNN recommends for small problems. Making four or five memory objects and their argument
// map on every run cost about 1 µs, half a small conv's own time (a 16-channel 1×1 conv over
// 7×7 took 2.1 µs alone, 4 with refold's call around it; session 45).
class BoundArgs {
 public:
  // Primitive `id`'s arguments on this thread (none the first time). `id` names one primitive
  // for the whole process (packed_weights.h: new_primitive_id), so arguments never outlive the
  // descriptions they were made for; a thread keeps those of its last 4096 primitives.
  static BoundArgs& of(std::uint64_t id);
  // Argument `arg`, described by `desc` (the same on every run of the primitive), reads or
  // writes `data`.
  void bind(int arg, const dnnl::memory::desc& desc, const void* data);
  // Argument `arg` is `memory` (a packed weight, which the weight cache keeps).
  void put(int arg, const dnnl::memory& memory) { args_.insert_or_assign(arg, memory); }
  // Runs `primitive` with them and the thread's scratchpad on `stream` (as execute() does).
  void run(const dnnl::primitive& primitive, dnnl::stream& stream);

 private:
  std::unordered_map<int, dnnl::memory> args_;
};

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
