// onnx::save: "nothing lost" (docs/reliability.md, promises after optimization).
//
// What is written, from a graph loaded from a file (graph.source set):
//   - the header as it was: ir_version, every opset_import, producer, domain, model_version,
//     doc_string, metadata_props, training_info, functions, and fields this protobuf version
//     does not know;
//   - nodes in graph order; a node with `parts` writes each part (recursively, by the same
//     rule); a node with source ≥ 0 whose op_type, domain, inputs and outputs still match its
//     NodeProto writes that NodeProto unchanged; any other node is built from its fields (name,
//     op_type, domain, inputs, outputs, attributes; `origin` goes to doc_string);
//   - the constants some written node (or a graph output) reads, and only those: constants no
//     written node reads are dropped (a folded BN's parameters, unused initializers). Original
//     initializers come first, in their order: the TensorProto unchanged when the constant's
//     source is still its index and its dims are unchanged, else re-serialized (raw_data) in the
//     initializer's original data type; new constants follow in the graph's constant order, in
//     refold's dtype. An unchanged initializer stored as external data is copied as it is only
//     when saving into the model's own folder; elsewhere its bytes are written inline, so the
//     output never points at files outside its folder;
//   - graph inputs, outputs and value_info with their original ValueInfoProto when the declared
//     type is unchanged (dim_param names included), in the original order; an IR 3 input that is
//     an initializer is kept when the initializer is; value_info of values no longer written is
//     dropped.
// A graph built in C++ (no source) gets ir_version 8, opset 17 and producer "refold".
// The file is written to a temporary name and renamed: whole or absent.
#include <map>
#include <set>

#include "core/check.h"
#include "io/file.h"
#include "onnx/attributes.h"
#include "onnx/opset.h"
#include "onnx/proto_io.h"
#include "onnx/source_model.h"
#include "onnx/tensor_proto.h"
#include "onnx/value_info.h"
#include "refold/onnx/onnx.h"
#include "refold/version.h"

namespace refold::onnx {
namespace {

using namespace detail;
namespace fs = std::filesystem;

constexpr int kDefaultIrVersion = 8;

void copy_header(const ::onnx::ModelProto& from, ::onnx::ModelProto& to) {
  if (from.has_ir_version()) to.set_ir_version(from.ir_version());
  *to.mutable_opset_import() = from.opset_import();
  if (from.has_producer_name()) to.set_producer_name(from.producer_name());
  if (from.has_producer_version()) to.set_producer_version(from.producer_version());
  if (from.has_domain()) to.set_domain(from.domain());
  if (from.has_model_version()) to.set_model_version(from.model_version());
  if (from.has_doc_string()) to.set_doc_string(from.doc_string());
  *to.mutable_metadata_props() = from.metadata_props();
  *to.mutable_training_info() = from.training_info();
  *to.mutable_functions() = from.functions();
  to.mutable_unknown_fields()->MergeFrom(from.unknown_fields());
  const ::onnx::GraphProto& g = from.graph();
  ::onnx::GraphProto& out = *to.mutable_graph();
  if (g.has_name()) out.set_name(g.name());
  if (g.has_doc_string()) out.set_doc_string(g.doc_string());
  *out.mutable_quantization_annotation() = g.quantization_annotation();
  out.mutable_unknown_fields()->MergeFrom(g.unknown_fields());
}

class Exporter {
 public:
  // `file`: where the model goes; empty for bytes in memory (external data is then embedded).
  Exporter(const graph::Graph& g, const fs::path& file) : g_(g), src_(g.source.get()) {
    if (src_ == nullptr) return;
    const auto& graph = src_->model.graph();
    for (int i = 0; i < graph.initializer_size(); ++i)
      initializer_index_[graph.initializer(i).name()] = i;
    // Copying an external-data reference is safe only into the folder it resolves against.
    if (file.empty()) return;
    std::error_code ec;
    fs::path dir = file.parent_path();
    if (dir.empty()) dir = ".";
    const fs::path out_dir = fs::canonical(dir, ec);
    same_folder_ = !ec && !src_->base_dir.empty() && out_dir == src_->base_dir;
  }

  ::onnx::ModelProto run() {
    ::onnx::ModelProto model;
    if (src_ != nullptr) {
      copy_header(src_->model, model);
    } else {
      model.set_ir_version(kDefaultIrVersion);
      auto* opset = model.add_opset_import();
      opset->set_domain("");
      opset->set_version(kDefaultOpset);
      model.set_producer_name("refold");
      model.set_producer_version(std::string(version()));
      model.mutable_graph()->set_name("refold");
    }
    ::onnx::GraphProto& out = *model.mutable_graph();
    for (const graph::Node& node : g_.nodes()) write_node(node, out);
    for (const graph::ValueInfo& v : g_.outputs) read_.insert(v.name);
    write_constants(out);
    write_interface(out);
    return model;
  }

 private:
  void note_node(const ::onnx::NodeProto& n) {
    for (const auto& in : n.input()) read_.insert(in);
    for (const auto& o : n.output()) written_.insert(o);
  }

  bool matches_source(const graph::Node& node) const {
    if (src_ == nullptr || node.source < 0 || node.source >= src_->model.graph().node_size())
      return false;
    const auto& n = src_->model.graph().node(node.source);
    return n.op_type() == node.op_type && n.domain() == node.domain &&
           std::equal(n.input().begin(), n.input().end(), node.inputs.begin(), node.inputs.end()) &&
           std::equal(n.output().begin(), n.output().end(), node.outputs.begin(),
                      node.outputs.end());
  }

  void write_node(const graph::Node& node, ::onnx::GraphProto& out) {
    if (!node.parts.empty()) {
      for (const graph::Node& part : node.parts) write_node(part, out);
      return;
    }
    ::onnx::NodeProto* n = out.add_node();
    if (matches_source(node)) {
      *n = src_->model.graph().node(node.source);
    } else {
      n->set_name(node.name);
      n->set_op_type(node.op_type);
      if (!node.domain.empty()) n->set_domain(node.domain);
      for (const auto& in : node.inputs) n->add_input(in);
      for (const auto& o : node.outputs) n->add_output(o);
      for (const auto& [name, value] : node.attributes.all()) {
        *n->add_attribute() = attribute_to_proto(name, value);
      }
      if (!node.origin.empty()) n->set_doc_string(node.origin);
    }
    note_node(*n);
  }

  void write_constants(::onnx::GraphProto& out) {
    std::set<std::string> done;
    if (src_ != nullptr) {
      const auto& graph = src_->model.graph();
      for (int i = 0; i < graph.initializer_size(); ++i) {
        const auto& original = graph.initializer(i);
        const std::string& name = original.name();
        if (read_.count(name) == 0 || !g_.is_constant(name)) continue;
        const Tensor& t = g_.constant(name);
        const bool unchanged = !src_->data_released && g_.constant_source(name) == i &&
                               std::equal(original.dims().begin(), original.dims().end(),
                                          t.sizes().begin(), t.sizes().end());
        const bool external = original.data_location() == ::onnx::TensorProto::EXTERNAL;
        if (unchanged && (!external || same_folder_)) {
          *out.add_initializer() = original;
        } else {
          *out.add_initializer() = tensor_to_proto(t, name, original.data_type());
        }
        done.insert(name);
      }
    }
    for (const std::string& name : g_.constant_names()) {
      if (read_.count(name) == 0 || done.count(name) != 0) continue;
      // A folded value keeps the element type it had in the file (a Less's BOOL, a Cast's INT32).
      int type = 0;
      if (src_ != nullptr)
        if (const auto t = src_->value_types.find(name); t != src_->value_types.end())
          type = t->second;
      *out.add_initializer() = tensor_to_proto(g_.constant(name), name, type);
      done.insert(name);
    }
    constants_written_ = std::move(done);
  }

  void write_interface(::onnx::GraphProto& out) {
    std::map<std::string, const graph::ValueInfo*> inputs;
    for (const auto& v : g_.inputs) inputs[v.name] = &v;
    std::set<std::string> done;
    if (src_ != nullptr) {
      for (const auto& v : src_->model.graph().input()) {
        const auto it = inputs.find(v.name());
        if (it != inputs.end()) {
          *out.add_input() = same_value_info(v, *it->second) ? v : value_info_to_proto(*it->second);
          done.insert(v.name());
        } else if (constants_written_.count(v.name()) != 0) {
          *out.add_input() = v;  // IR 3: the initializer is also listed as an input
        }
      }
    }
    for (const auto& v : g_.inputs) {
      if (done.count(v.name) == 0) *out.add_input() = value_info_to_proto(v);
    }

    std::map<std::string, const ::onnx::ValueInfoProto*> original_outputs;
    if (src_ != nullptr) {
      for (const auto& v : src_->model.graph().output()) original_outputs[v.name()] = &v;
    }
    for (const auto& v : g_.outputs) {
      const auto it = original_outputs.find(v.name);
      const bool keep = it != original_outputs.end() && same_value_info(*it->second, v);
      *out.add_output() = keep ? *it->second : value_info_to_proto(v);
    }

    // value_info: only for values the written graph still has.
    auto exists = [&](const std::string& name) {
      return written_.count(name) != 0 || inputs.count(name) != 0 ||
             constants_written_.count(name) != 0;
    };
    std::map<std::string, const graph::ValueInfo*> declared;
    for (const auto& v : g_.value_info) declared[v.name] = &v;
    std::set<std::string> infos;
    if (src_ != nullptr) {
      for (const auto& v : src_->model.graph().value_info()) {
        if (!exists(v.name())) continue;
        const auto it = declared.find(v.name());
        const bool keep = it == declared.end() || same_value_info(v, *it->second);
        *out.add_value_info() = keep ? v : value_info_to_proto(*it->second);
        infos.insert(v.name());
      }
    }
    for (const auto& v : g_.value_info) {
      if (infos.count(v.name) == 0 && exists(v.name))
        *out.add_value_info() = value_info_to_proto(v);
    }
  }

  const graph::Graph& g_;
  const graph::SourceModel* src_;
  std::map<std::string, int> initializer_index_;
  bool same_folder_ = false;
  std::set<std::string> read_;     // values read by written nodes or graph outputs
  std::set<std::string> written_;  // values written by written nodes
  std::set<std::string> constants_written_;
};

}  // namespace

namespace {

std::string serialize(const graph::Graph& graph, const fs::path& file) {
  std::string bytes;
  const ::onnx::ModelProto model = Exporter(graph, file).run();
  const std::size_t size = model.ByteSizeLong();
  REFOLD_CHECK(size <= kMaxProtoBytes,
               "the model would be {} bytes, over protobuf's 2 GiB limit (external data is not "
               "written yet)",
               size);
  REFOLD_CHECK(model.SerializeToString(&bytes), "protobuf serialization failed");
  return bytes;
}

}  // namespace

std::string save_to_bytes(const graph::Graph& graph) { return serialize(graph, {}); }

void save(const graph::Graph& graph, const fs::path& file) {
  REFOLD_CHECK(!file.empty(), "save: no file name given");
  std::string bytes;
  try {
    bytes = serialize(graph, file);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", file.string(), e.what()));
  }
  io::AtomicFileWriter writer(file, "model");
  writer.write(std::as_bytes(std::span(bytes.data(), bytes.size())));
  writer.commit();
}

}  // namespace refold::onnx
