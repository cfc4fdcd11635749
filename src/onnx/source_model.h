// graph::SourceModel — the parsed ONNX file a Graph came from (opaque outside src/onnx).
//
// The exporter copies from it: the header (ir_version, opset_import, producer, doc_string,
// metadata_props), the NodeProto of every node whose `source` is its index, the TensorProto of
// every constant whose `constant_source` is its index (unless the data was released), and the
// declared ValueInfoProtos. That is how "untouched nodes and initializers byte-identical, in the
// same order" holds.
#pragma once

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <map>
#include <string>

namespace refold::graph {

struct SourceModel {
  ::onnx::ModelProto model;
  // The folder the model's external data was resolved against (absolute, canonical).
  std::filesystem::path base_dir;
  // The file name as it appears in messages.
  std::string file;
  // The initializers' data was dropped as their tensors were made (LoadOptions::keep_source_data
  // false): each keeps its name, dims and data type, and export writes every constant from its
  // tensor in that data type.
  bool data_released = false;
  // The ONNX element type of each value of the file's graph, as the type check followed it
  // (onnx/type_check.h): export writes a constant folded from a value in that type — a bool or
  // int32 refold holds as int64 goes back as BOOL or INT32, as its readers require.
  std::map<std::string, int> value_types;
};

}  // namespace refold::graph
