// graph::SourceModel — the parsed ONNX file a Graph came from (opaque outside src/onnx).
//
// The exporter copies from it: the header (ir_version, opset_import, producer, doc_string,
// metadata_props), the NodeProto of every node whose `source` is its index, the TensorProto of
// every constant whose `constant_source` is its index, and the declared ValueInfoProtos. That is
// how "untouched nodes and initializers byte-identical, in the same order" holds.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>

#include "refold/graph/graph.h"

namespace refold::graph {

struct SourceModel {
  ::onnx::ModelProto model;
  // The folder the model's external data was resolved against (absolute, canonical).
  std::filesystem::path base_dir;
  // The file name as it appears in messages.
  std::string file;
};

// Drops the data of the source's initializers, which the graph's constants hold again, for a
// graph that is only run from now on (refold::Session): the file's weights are then in memory
// once, not twice. Each initializer keeps its name, dims and data type; every constant that was
// its unchanged copy is marked changed, so that saving the graph still writes it, from the tensor
// in the file's data type — only no longer byte for byte the file's own TensorProto.
void release_source_constants(Graph& graph);

}  // namespace refold::graph
