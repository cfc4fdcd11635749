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

dnnl::memory thread_scratchpad(const dnnl::memory::desc& desc) {
  struct FreeDeleter {
    void operator()(void* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<void, FreeDeleter> buffer;
  thread_local std::size_t capacity = 0;
  const std::size_t size = desc.get_size();
  if (size > capacity) {
    constexpr std::size_t kAlignment = 64;
    const std::size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
    buffer.reset(std::aligned_alloc(kAlignment, rounded));
    capacity = buffer ? rounded : 0;
    if (!buffer) fail("onednn scratchpad: cannot allocate {} bytes", rounded);
  }
  return dnnl::memory(desc, cpu_engine(), size == 0 ? nullptr : buffer.get());
}

void execute(const dnnl::primitive& primitive, dnnl::stream& stream,
             std::unordered_map<int, dnnl::memory> args) {
  const dnnl_memory_desc_t* scratchpad =
      dnnl_primitive_desc_query_md(primitive.get_primitive_desc(), dnnl_query_scratchpad_md, 0);
  if (scratchpad != nullptr) args.emplace(DNNL_ARG_SCRATCHPAD, thread_scratchpad(*scratchpad));
  primitive.execute(stream, args);
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
