#include "kernels/onednn/engine.h"

#include <cstdlib>
#include <memory>

namespace refold::onednn {

const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine =
      call("onednn engine", [] { return dnnl::engine(dnnl::engine::kind::cpu, 0); });
  return engine;
}

dnnl::stream& cpu_stream() {
  thread_local dnnl::stream stream =
      call("onednn stream", [] { return dnnl::stream(cpu_engine()); });
  return stream;
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

void* thread_scratchpad(std::size_t bytes) {
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, FreeDeleter> buffer;
  thread_local std::size_t capacity = 0;
  if (bytes > capacity) {
    constexpr std::size_t kAlignment = 64;
    const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    buffer.reset(std::aligned_alloc(kAlignment, rounded));
    capacity = buffer ? rounded : 0;
    if (!buffer) fail("onednn scratchpad: cannot allocate {} bytes", rounded);
  }
  return bytes == 0 ? nullptr : buffer.get();
}

namespace {

// The scratchpad a primitive asks for, or null.
const dnnl_memory_desc_t* scratchpad_of(const dnnl::primitive& primitive) {
  return dnnl_primitive_desc_query_md(primitive.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
}

}  // namespace

void execute(const dnnl::primitive& primitive, dnnl::stream& stream,
             std::unordered_map<int, dnnl::memory> args) {
  if (const dnnl_memory_desc_t* scratchpad = scratchpad_of(primitive)) {
    const dnnl::memory::desc desc(*scratchpad);
    args.emplace(DNNL_ARG_SCRATCHPAD,
                 dnnl::memory(desc, cpu_engine(), thread_scratchpad(desc.get_size())));
  }
  primitive.execute(stream, args);
}

BoundArgs& BoundArgs::of(std::uint64_t id) {
  constexpr std::size_t kPrimitivesPerThread = 4096;
  thread_local std::unordered_map<std::uint64_t, BoundArgs> bound;
  if (bound.size() >= kPrimitivesPerThread && bound.find(id) == bound.end()) bound.clear();
  return bound[id];
}

void BoundArgs::bind(int arg, const dnnl::memory::desc& desc, const void* data) {
  void* handle = const_cast<void*>(data);  // oneDNN takes void*; inputs are only read
  if (const auto it = args_.find(arg); it != args_.end()) {
    it->second.set_data_handle(handle);
  } else {
    args_.emplace(arg, dnnl::memory(desc, cpu_engine(), handle));
  }
}

void BoundArgs::run(const dnnl::primitive& primitive, dnnl::stream& stream) {
  if (const dnnl_memory_desc_t* scratchpad = scratchpad_of(primitive)) {
    const dnnl::memory::desc desc(*scratchpad);
    bind(DNNL_ARG_SCRATCHPAD, desc, thread_scratchpad(desc.get_size()));
  }
  primitive.execute(stream, args_);
}

std::string_view status_name(dnnl_status_t status) {
  switch (status) {
    case dnnl_success:
      return "success";
    case dnnl_out_of_memory:
      return "out_of_memory";
    case dnnl_invalid_arguments:
      return "invalid_arguments";
    case dnnl_unimplemented:
      return "unimplemented";
    case dnnl_iterator_ends:
      return "iterator_ends";
    case dnnl_runtime_error:
      return "runtime_error";
    case dnnl_not_required:
      return "not_required";
  }
  return "unknown";
}

}  // namespace refold::onednn
