// source_model.h: releasing the source's copies of the constants.
#include "onnx/source_model.h"

#include <memory>

namespace refold::graph {

void release_source_constants(Graph& graph) {
  if (graph.source == nullptr) return;
  // The source is shared with every graph loaded with it (a copy of the graph, say): those keep
  // theirs, and this graph gets a lean copy. Alone, it is released in place (it was made
  // non-const by the loader, so writing through this pointer is well-defined).
  std::shared_ptr<SourceModel> lean;
  if (graph.source.use_count() == 1) {
    lean = std::const_pointer_cast<SourceModel>(graph.source);
  } else {
    lean = std::make_shared<SourceModel>(*graph.source);
  }
  ::onnx::GraphProto& proto = *lean->model.mutable_graph();
  for (int i = 0; i < proto.initializer_size(); ++i) {
    ::onnx::TensorProto& t = *proto.mutable_initializer(i);
    if (graph.is_constant(t.name()) && graph.constant_source(t.name()) == i)
      graph.set_constant(t.name(), graph.constant(t.name()));  // no longer the file's copy
    ::onnx::TensorProto header;
    header.set_name(t.name());
    *header.mutable_dims() = t.dims();
    header.set_data_type(t.data_type());
    t.Swap(&header);
  }
  graph.source = std::move(lean);
}

}  // namespace refold::graph
