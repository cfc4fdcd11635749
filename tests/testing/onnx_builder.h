// Crafting ONNX models in tests, valid or deliberately broken.
//
//   testing::TempDir dir;
//   testing::OnnxBuilder b;                          // opset 17, IR 8
//   b.input("x", {"N", 3, 8, 8}).output("y", {"N", 4, 8, 8});
//   b.initializer("w", testing::iota({4, 3, 3, 3}));
//   b.node("Conv", {"x", "w"}, {"y"}, "conv1").attr_ints("pads", {1, 1, 1, 1});
//   auto g = onnx::load(b.save(dir / "model.onnx"));
//
// model() and graph() hand out the ModelProto itself, to break it in ways the helpers do not
// (duplicate attributes, raw_data of the wrong length, external data entries, …).
#pragma once

// The test binary does not link onnx_proto directly, so it lacks the definitions that target
// carries; they must match the library's (ONNX_ML=1 selects onnx-ml.pb.h).
#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "refold/onnx/onnx.h"
#include "refold/tensor.h"
#include "testing/error_table.h"

namespace refold::testing {

// A fresh directory under the system temporary folder, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("refold-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Writes `bytes` to `file` (a helper for hand-made files).
inline void write_file(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

// A TensorProto .pb of 16-bit patterns as ONNX's test data stores bfloat16: data_type UINT16,
// raw little-endian, named after the file's stem. Returns `file`.
inline std::filesystem::path write_uint16_tensor(const std::filesystem::path& file,
                                                 const std::vector<std::uint16_t>& bits) {
  ::onnx::TensorProto t;
  t.set_name(file.stem().string());
  t.set_data_type(::onnx::TensorProto::UINT16);
  t.add_dims(static_cast<std::int64_t>(bits.size()));
  std::string raw(bits.size() * 2, '\0');
  std::memcpy(raw.data(), bits.data(), raw.size());
  t.set_raw_data(raw);
  write_file(file, t.SerializeAsString());
  return file;
}

inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A float32 or int64 Tensor as a TensorProto with raw_data (little-endian, row-major).
inline ::onnx::TensorProto tensor_proto(const std::string& name, const Tensor& tensor) {
  ::onnx::TensorProto t;
  t.set_name(name);
  for (std::int64_t s : tensor.sizes()) t.add_dims(s);
  if (tensor.dtype() == DType::Int64) {
    t.set_data_type(::onnx::TensorProto::INT64);
    const Tensor c = tensor.clone(MemoryFormat::Contiguous);
    const auto* p = reinterpret_cast<const char*>(c.data<std::int64_t>());
    t.set_raw_data(std::string(p, p + 8 * c.numel()));
  } else {
    t.set_data_type(::onnx::TensorProto::FLOAT);
    const std::vector<float> v = tensor.to_vector();
    const auto* p = reinterpret_cast<const char*>(v.data());
    t.set_raw_data(std::string(p, p + 4 * v.size()));
  }
  return t;
}

// One declared dimension: a number or a dim_param name.
using DimSpec = std::variant<std::int64_t, std::string>;

// A NodeProto being built; attr_* add attributes and return *this.
class NodeRef {
 public:
  explicit NodeRef(::onnx::NodeProto* node) : node_(node) {}
  ::onnx::NodeProto& proto() { return *node_; }
  NodeRef& attr_int(const std::string& name, std::int64_t v) {
    auto* a = add(name, ::onnx::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  NodeRef& attr_float(const std::string& name, float v) {
    auto* a = add(name, ::onnx::AttributeProto::FLOAT);
    a->set_f(v);
    return *this;
  }
  NodeRef& attr_string(const std::string& name, const std::string& v) {
    auto* a = add(name, ::onnx::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  NodeRef& attr_ints(const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = add(name, ::onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
    return *this;
  }
  NodeRef& attr_floats(const std::string& name, const std::vector<float>& v) {
    auto* a = add(name, ::onnx::AttributeProto::FLOATS);
    for (auto x : v) a->add_floats(x);
    return *this;
  }
  NodeRef& attr_tensor(const std::string& name, const Tensor& v) {
    auto* a = add(name, ::onnx::AttributeProto::TENSOR);
    *a->mutable_t() = tensor_proto("", v);
    return *this;
  }

 private:
  ::onnx::AttributeProto* add(const std::string& name, ::onnx::AttributeProto::AttributeType type) {
    auto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }
  ::onnx::NodeProto* node_;
};

class OnnxBuilder {
 public:
  explicit OnnxBuilder(std::int64_t opset = 17, std::int64_t ir_version = 8) {
    model_.set_ir_version(ir_version);
    model_.set_producer_name("refold-tests");
    auto* import = model_.add_opset_import();
    import->set_domain("");
    import->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  ::onnx::ModelProto& model() { return model_; }
  ::onnx::GraphProto& graph() { return *model_.mutable_graph(); }

  // dims: numbers or dim_param names, e.g. {"N", 3, 8, 8}.
  OnnxBuilder& input(const std::string& name, const std::vector<DimSpec>& dims,
                     int elem_type = ::onnx::TensorProto::FLOAT) {
    *graph().add_input() = value_info(name, dims, elem_type);
    return *this;
  }
  OnnxBuilder& output(const std::string& name, const std::vector<DimSpec>& dims,
                      int elem_type = ::onnx::TensorProto::FLOAT) {
    *graph().add_output() = value_info(name, dims, elem_type);
    return *this;
  }
  // An output of unknown shape.
  OnnxBuilder& output(const std::string& name) {
    *graph().add_output() = value_info(name, std::nullopt, ::onnx::TensorProto::FLOAT);
    return *this;
  }
  OnnxBuilder& initializer(const std::string& name, const Tensor& tensor) {
    *graph().add_initializer() = tensor_proto(name, tensor);
    return *this;
  }
  ::onnx::TensorProto& initializer_proto(int index) { return *graph().mutable_initializer(index); }

  NodeRef node(const std::string& op_type, const std::vector<std::string>& inputs,
               const std::vector<std::string>& outputs, const std::string& name = "") {
    auto* n = graph().add_node();
    n->set_op_type(op_type);
    if (!name.empty()) n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    return NodeRef(n);
  }

  std::string bytes() const { return model_.SerializeAsString(); }
  // Serializes to `file` and returns it.
  std::filesystem::path save(const std::filesystem::path& file) const {
    write_file(file, bytes());
    return file;
  }

  static ::onnx::ValueInfoProto value_info(const std::string& name,
                                           const std::optional<std::vector<DimSpec>>& dims,
                                           int elem_type) {
    ::onnx::ValueInfoProto v;
    v.set_name(name);
    auto* t = v.mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    if (dims) {
      auto* shape = t->mutable_shape();
      for (const DimSpec& d : *dims) {
        auto* dim = shape->add_dim();
        if (const auto* n = std::get_if<std::int64_t>(&d)) {
          dim->set_dim_value(*n);
        } else {
          dim->set_dim_param(std::get<std::string>(d));
        }
      }
    }
    return v;
  }

 private:
  ::onnx::ModelProto model_;
};

// Loading `b`, saved to a fresh folder as model.onnx, throws refold::Error naming the file first
// and containing `message`.
inline ::testing::AssertionResult load_fails_with(const OnnxBuilder& b, const std::string& message,
                                                  const onnx::LoadOptions& options = {}) {
  TempDir dir;
  const auto file = b.save(dir / "model.onnx");
  return throws_error([&] { onnx::load(file, options); }, message, file.string() + ": ");
}

}  // namespace refold::testing
