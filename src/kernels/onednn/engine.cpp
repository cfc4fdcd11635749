#include "kernels/onednn/engine.h"

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
