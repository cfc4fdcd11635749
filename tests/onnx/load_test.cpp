// onnx::load: docs/reliability.md sections A (container) and B (graph structure), each row a
// crafted model and the exact error text; plus loading and running Conv/Relu/Add models.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/functional.h"
#include "refold/onnx/onnx.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/onnx_builder.h"

namespace refold::onnx {
namespace {

using testing::OnnxBuilder;
using testing::TempDir;

// x[1,4,6,6] → Conv(3×3, pad 1, 4→4, bias) → Relu → Add(·, x) → y
OnnxBuilder conv_relu_add(std::int64_t opset = 17, std::int64_t ir = 8) {
  OnnxBuilder b(opset, ir);
  Generator gen(7);
  b.input("x", {"N", 4, 6, 6}).output("y", {"N", 4, 6, 6});
  b.initializer("w", testing::uniform({4, 4, 3, 3}, 0.3, gen));
  b.initializer("b", testing::uniform({4}, 0.3, gen));
  b.node("Conv", {"x", "w", "b"}, {"c"}, "conv1").attr_ints("pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"r"}, "relu1");
  b.node("Add", {"r", "x"}, {"y"}, "add1");
  return b;
}

Tensor reference(const graph::Graph& g, const Tensor& x) {
  Conv2dOptions options;
  options.padding = 1;
  return functional::add(
      functional::relu(functional::conv2d(x, g.constant("w"), g.constant("b"), options)), x);
}

// The error load() throws for `b`, saved as dir/model.onnx.
void expect_load_error(const OnnxBuilder& b, const std::string& message,
                       const LoadOptions& options = {}) {
  EXPECT_TRUE(testing::load_fails_with(b, message, options)) << message;
}

void expect_bytes_error(const std::string& bytes, const std::string& message) {
  TempDir dir;
  testing::write_file(dir / "model.onnx", bytes);
  EXPECT_TRUE(testing::throws_error([&] { load(dir / "model.onnx"); }, message)) << message;
}

TEST(OnnxLoad, ConvReluAddRunsLikeTheReference) {
  TempDir dir;
  const auto g = load(conv_relu_add().save(dir / "model.onnx"));
  ASSERT_EQ(g->nodes().size(), 3u);
  EXPECT_EQ(g->nodes()[0].name, "conv1");
  EXPECT_EQ(g->nodes()[0].source, 0);
  ASSERT_EQ(g->inputs.size(), 1u);
  ASSERT_TRUE(g->inputs[0].shape.has_value());
  EXPECT_EQ((*g->inputs[0].shape)[0].param, "N");
  EXPECT_EQ((*g->inputs[0].shape)[1].value, 4);
  EXPECT_EQ(g->constant_source("w"), 0);
  EXPECT_EQ(g->constant_source("b"), 1);
  Generator gen(1);
  const Tensor x = randn({2, 4, 6, 6}, {}, gen);
  const Tensor y = g->run({x})[0];
  EXPECT_TRUE(testing::all_close(y, reference(*g, x), testing::Tolerance::op_f32()));
}

// ---------------------------------------------------------------------------------------------
// A. Container / protobuf

TEST(OnnxLoad, A1A2EmptyAndTinyFilesHaveNoGraph) {
  expect_bytes_error("", "not an ONNX model: no graph");
  expect_bytes_error(std::string("\x08\x07", 2), "not an ONNX model: no graph");
}

TEST(OnnxLoad, A3TruncatedFilesAreCorrupt) {
  const std::string bytes = conv_relu_add().bytes();
  for (std::size_t cut : {bytes.size() / 2, bytes.size() - 1, std::size_t{10}}) {
    TempDir dir;
    testing::write_file(dir / "model.onnx", bytes.substr(0, cut));
    // Either protobuf sees the cut, or a top-level field is missing (caught by A7 / no graph).
    try {
      load(dir / "model.onnx");
      ADD_FAILURE() << "cut at " << cut << " loaded";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find("truncated/corrupt protobuf (" + std::to_string(cut) + " bytes)") !=
                      std::string::npos ||
                  m.find("no opset_import") != std::string::npos ||
                  m.find("no graph") != std::string::npos)
          << "cut at " << cut << ": " << m;
    }
  }
  TempDir dir;
  testing::write_file(dir / "model.onnx", bytes.substr(0, bytes.size() / 2));
  EXPECT_TRUE(
      testing::throws_error([&] { load(dir / "model.onnx"); }, "truncated/corrupt protobuf"));
}

TEST(OnnxLoad, A4OtherFilesAreNotModels) {
  // A TensorProto parses as a ModelProto without a graph.
  const auto t = testing::tensor_proto("t", testing::iota({2, 3}));
  expect_bytes_error(t.SerializeAsString(), "not an ONNX model");
  const std::string safetensors = std::string("\x02\0\0\0\0\0\0\0", 8) + "{}";
  expect_bytes_error(safetensors, "not an ONNX model: the file looks like a safetensors file");
  expect_bytes_error(std::string("\xFF\xD8\xFF\xE0\x00\x10JFIF\x00", 11), "not an ONNX model");
  expect_bytes_error("ir_version: 8\ngraph { node { op_type: \"Relu\" } }\n", "not an ONNX model");
}

TEST(OnnxLoad, A5HugeFilesAreRefusedBeforeParsing) {
  TempDir dir;
  const auto file = dir / "big.onnx";
  {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, off_t{1} << 31), 0);  // sparse: no disk space used
    ::close(fd);
  }
  EXPECT_TRUE(testing::throws_error([&] { load(file); }, "protobuf cannot parse 2 GiB or more"));
  const auto small = conv_relu_add().save(dir / "model.onnx");
  LoadOptions tight;
  tight.max_memory = 100;
  EXPECT_TRUE(
      testing::throws_error([&] { load(small, tight); }, "over the memory budget of 100 bytes"));
}

TEST(OnnxLoad, A6A7A8HeaderChecks) {
  expect_load_error(conv_relu_add(17, 0), "IR version 0 unsupported (min 3, max 14)");
  expect_load_error(conv_relu_add(17, 15), "IR version 15 unsupported (min 3, max 14)");
  expect_load_error(conv_relu_add(99), "opset 99 unsupported; supported 1 ≤ opset ≤ 21");
  expect_load_error(conv_relu_add(22), "opset 22 unsupported; supported 1 ≤ opset ≤ 21");
  expect_load_error(conv_relu_add(0), "opset 0 unsupported; supported 1 ≤ opset ≤ 21");
  OnnxBuilder no_opset = conv_relu_add();
  no_opset.model().clear_opset_import();
  expect_load_error(no_opset, "no opset_import for the ai.onnx domain");
  OnnxBuilder other_only = conv_relu_add();
  other_only.model().mutable_opset_import(0)->set_domain("com.microsoft");
  expect_load_error(other_only, "no opset_import for the ai.onnx domain");
  OnnxBuilder twice = conv_relu_add();
  *twice.model().add_opset_import() = twice.model().opset_import(0);
  expect_load_error(twice, "opset_import lists domain '' twice");
}

// Loads b's model, checks that it runs like the reference on a [1, 4, 6, 6] input, saves it and
// returns what was written.
::onnx::ModelProto run_and_round_trip(const OnnxBuilder& b) {
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  Generator gen(3);
  const Tensor x = testing::uniform({1, 4, 6, 6}, 1.0, gen);
  EXPECT_TRUE(testing::all_close(g->run({x})[0], reference(*g, x), testing::Tolerance::op_f32()));
  save(*g, dir / "out.onnx");
  ::onnx::ModelProto written;
  EXPECT_TRUE(written.ParseFromString(testing::read_file(dir / "out.onnx")));
  return written;
}

// IR 10 (PyTorch's dynamo exporter) at opset 21: what IR 9/10 add reaches libonnx 1.12 as
// unknown fields. metadata_props (NodeProto field 9) means nothing to the computation: the
// model loads, runs, and export writes the field back. NodeProto.overload (field 8) picks a
// model-local function: refused, naming the node.
TEST(OnnxLoad, Ir10FieldsAreKeptOrRefused) {
  OnnxBuilder b = conv_relu_add(21, 10);
  ::onnx::StringStringEntryProto entry;
  entry.set_key("pkg.torch.onnx.stack_trace");
  entry.set_value("model.py:12");
  b.model().mutable_graph()->mutable_node(0)->mutable_unknown_fields()->AddLengthDelimited(
      9, entry.SerializeAsString());
  const ::onnx::ModelProto written = run_and_round_trip(b);
  EXPECT_EQ(written.ir_version(), 10);
  EXPECT_EQ(written.opset_import(0).version(), 21);
  EXPECT_EQ(written.graph().node(0).unknown_fields().field_count(), 1);

  OnnxBuilder overloaded = conv_relu_add(21, 10);
  overloaded.model().mutable_graph()->mutable_node(1)->mutable_unknown_fields()->AddLengthDelimited(
      8, "relu_v2");
  expect_load_error(overloaded,
                    "node 'relu1' (Relu): overload 'relu_v2' (IR 10 function overloads) is not "
                    "supported");
}

// onnx.helper.make_model of ONNX 1.23 writes IR 14 whatever the opset: such a model loads and
// runs, and export keeps its IR version. An element type newer than libonnx's schema
// (FLOAT4E2M1, 23, from IR 11) is refused naming the tensor.
TEST(OnnxLoad, NewestIrVersionsLoad) {
  EXPECT_EQ(run_and_round_trip(conv_relu_add(17, 14)).ir_version(), 14);

  OnnxBuilder fp4 = conv_relu_add(17, 14);
  fp4.model().mutable_graph()->mutable_initializer(0)->set_data_type(23);
  expect_load_error(fp4, fp4.model().graph().initializer(0).name());
}

TEST(OnnxLoad, A9OpVersionNotImplemented) {
  OnnxBuilder b(13);
  b.input("x", {1, 2}).output("y");
  b.node("HardSwish", {"x"}, {"y"}, "hs");  // HardSwish exists from opset 14
  expect_load_error(b, "1 unsupported op: node 'hs' (HardSwish)");
}

TEST(OnnxLoad, A10AllUnsupportedOpsAtOnce) {
  OnnxBuilder b;
  b.input("x", {1, 4, 6, 6}).output("z");
  auto fused = b.node("FusedConv", {"x"}, {"y"}, "f");
  fused.proto().set_domain("com.microsoft");
  b.node("Relu", {"y"}, {"r"}, "ok");
  b.node("FancyConv", {"r"}, {"z"});
  expect_load_error(b, "2 unsupported ops: node 'f' (com.microsoft.FusedConv): ");
  expect_load_error(b, "; node 'FancyConv_2' (FancyConv): ");
}

// test_adagrad, test_adam, …: a model whose nodes are all in another domain imports only that
// domain. It needs no ai.onnx import; its ops are listed as unsupported, naming the domain.
TEST(OnnxLoad, A7A10OtherDomainOnlyModelsListTheirOpsAsUnsupported) {
  OnnxBuilder b;
  b.model().mutable_opset_import(0)->set_domain("ai.onnx.preview.training");
  b.model().mutable_opset_import(0)->set_version(1);
  b.input("R", {}).input("T", {}, ::onnx::TensorProto::INT64).input("X", {2}).input("G", {2});
  b.input("H", {2}).output("X_new", {2}).output("H_new", {2});
  auto n = b.node("Adagrad", {"R", "T", "X", "G", "H"}, {"X_new", "H_new"}, "Adagrad_0");
  n.proto().set_domain("ai.onnx.preview.training");
  expect_load_error(b,
                    "1 unsupported op: node 'Adagrad_0' (ai.onnx.preview.training.Adagrad): "
                    "domain 'ai.onnx.preview.training' (op Adagrad) is not supported; refold runs "
                    "ai.onnx ops");
  // One ai.onnx node among them: then the ai.onnx import is required (A7).
  b.node("Relu", {"X_new"}, {"r"}, "relu");
  expect_load_error(b,
                    "no opset_import for the ai.onnx domain (\"\"); 1 imports: "
                    "{ai.onnx.preview.training}");
}

// test_maxpool_2d_uint8: MaxPool-12 takes (u)int8, which refold holds as int64 and does not pool;
// a declared integer input is refused at load time, naming the node, the input and the type.
TEST(OnnxLoad, MaxPoolOfADeclaredIntegerInputIsUnsupported) {
  for (int type : {::onnx::TensorProto::UINT8, ::onnx::TensorProto::INT8}) {
    OnnxBuilder b;
    b.input("x", {1, 1, 5, 5}, type).output("y", {1, 1, 4, 4}, type);
    b.node("MaxPool", {"x"}, {"y"}, "MaxPool_0").attr_ints("kernel_shape", {2, 2});
    expect_load_error(b, std::string("node 'MaxPool_0' (MaxPool): unsupported: input 'x' has "
                                     "element type ") +
                             (type == ::onnx::TensorProto::UINT8 ? "uint8" : "int8") +
                             " (refold's MaxPool takes float32, float16 and bfloat16)");
  }
  // Declared by value_info, behind an Identity.
  OnnxBuilder b;
  b.input("x", {1, 1, 5, 5}, ::onnx::TensorProto::UINT8).output("y");
  b.node("Identity", {"x"}, {"i"}, "id");
  b.node("MaxPool", {"i"}, {"y"}, "pool").attr_ints("kernel_shape", {2, 2});
  *b.graph().add_value_info() =
      OnnxBuilder::value_info("i", std::nullopt, ::onnx::TensorProto::UINT8);
  expect_load_error(b, "node 'pool' (MaxPool): unsupported: input 'i' has element type uint8");
  // float32 (and an undeclared input) loads and pools.
  OnnxBuilder f;
  f.input("x", {1, 1, 3, 3}).output("y");
  f.node("MaxPool", {"x"}, {"y"}, "pool").attr_ints("kernel_shape", {2, 2});
  TempDir dir;
  const auto g = load(f.save(dir / "model.onnx"));
  const Tensor y = g->run({testing::iota({1, 1, 3, 3})})[0];
  EXPECT_EQ(y.to_vector(), (std::vector<float>{4, 5, 7, 8}));
}

TEST(OnnxLoad, A11DeepNestingAndNodeLimit) {
  // A Relu whose attribute holds a graph holding a node whose attribute holds a graph …
  OnnxBuilder b;
  b.input("x", {1}).output("y");
  ::onnx::NodeProto* at = &b.node("Relu", {"x"}, {"y"}, "deep").proto();
  for (int depth = 0; depth < 60; ++depth) {  // 60 × (attribute, graph, node) ≫ 100 levels
    auto* a = at->add_attribute();
    a->set_name("body");
    a->set_type(::onnx::AttributeProto::GRAPH);
    at = a->mutable_g()->add_node();
    at->set_op_type("Relu");
  }
  expect_load_error(b, "nested deeper than 100 levels");

  LoadOptions few;
  few.max_nodes = 2;
  expect_load_error(conv_relu_add(), "graph has 3 nodes, over the limit of 2", few);
}

TEST(OnnxLoad, GraphAttributesAreListedAsUnsupported) {
  OnnxBuilder b;
  b.input("x", {1}).output("y");
  auto n = b.node("Relu", {"x"}, {"y"}, "r");
  auto* a = n.proto().add_attribute();
  a->set_name("body");
  a->set_type(::onnx::AttributeProto::GRAPH);
  expect_load_error(b, "node 'r' (Relu): attribute 'body' of type GRAPH unsupported");
}

// ---------------------------------------------------------------------------------------------
// B. Graph structure

TEST(OnnxLoad, B1CyclesAreNamedAndUnsortedGraphsLoad) {
  OnnxBuilder cyc;
  cyc.input("x", {1, 2}).output("y");
  cyc.node("Add", {"x", "b"}, {"a"}, "n_a");
  cyc.node("Relu", {"a"}, {"b"}, "n_b");
  cyc.node("Relu", {"a"}, {"y"}, "n_y");
  expect_load_error(cyc, "cycle involving nodes 'n_a' (Add) -> 'n_b' (Relu) -> 'n_a'");

  OnnxBuilder self;
  self.input("x", {1, 2}).output("y");
  self.node("Add", {"x", "y"}, {"y"}, "loop");
  expect_load_error(self, "cycle involving nodes 'loop' (Add) -> 'loop'");

  // The same Conv/Relu/Add model with its nodes in reverse order.
  OnnxBuilder b = conv_relu_add();
  auto* nodes = b.graph().mutable_node();
  std::reverse(nodes->begin(), nodes->end());
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  ASSERT_EQ(g->nodes().size(), 3u);
  EXPECT_EQ(g->nodes()[0].name, "conv1");
  EXPECT_EQ(g->nodes()[0].source, 2);
  EXPECT_EQ(g->nodes()[2].name, "add1");
  const Tensor x = randn({1, 4, 6, 6});
  EXPECT_TRUE(testing::all_close(g->run({x})[0], reference(*g, x), testing::Tolerance::op_f32()));
}

TEST(OnnxLoad, B2ToB7StructureErrors) {
  {
    OnnxBuilder b;
    b.input("x", {1, 2}).output("y");
    b.node("Relu", {"nope"}, {"y"}, "n");
    expect_load_error(b, "node 'n' (Relu) input 'nope' is undefined");
  }
  {
    OnnxBuilder b;
    b.input("x", {1, 2}).output("y");
    b.node("Relu", {"x"}, {"y"}, "a");
    b.node("Relu", {"x"}, {"y"}, "b");
    expect_load_error(b, "value 'y' is written twice: by node 'a' (Relu) and by node 'b' (Relu)");
  }
  {
    OnnxBuilder b;
    b.input("x", {1, 2}).output("x");
    b.node("Relu", {"x"}, {"x"}, "a");
    expect_load_error(b, "node 'a' (Relu) writes graph input 'x'");
  }
  {
    OnnxBuilder b = conv_relu_add();
    b.node("Relu", {"x"}, {"w"}, "over");
    expect_load_error(b, "node 'over' (Relu) writes initializer 'w'");
  }
  {
    OnnxBuilder b = conv_relu_add();
    b.input("x", {1, 4, 6, 6});
    expect_load_error(b, "duplicate graph input 'x'");
  }
  {
    OnnxBuilder b = conv_relu_add();
    b.initializer("w", zeros({1}));
    expect_load_error(b, "duplicate initializer 'w'");
  }
  {
    OnnxBuilder b = conv_relu_add();
    b.output("z");
    expect_load_error(b, "graph output 'z' is not produced by any node, input or initializer");
  }
  {
    OnnxBuilder b = conv_relu_add();
    b.graph().mutable_node(1)->set_op_type("");
    expect_load_error(b, "node #1 'relu1': empty op_type");
  }
  {
    OnnxBuilder b = conv_relu_add();
    auto* conv = b.graph().mutable_node(0);
    *conv->add_attribute() = conv->attribute(0);
    expect_load_error(b, "node 'conv1' (Conv): duplicate attribute 'pads'");
  }
}

TEST(OnnxLoad, BuilderErrorsNameTheFileAndNode) {
  OnnxBuilder b = conv_relu_add();
  b.graph().mutable_node(0)->clear_attribute();
  testing::NodeRef(b.graph().mutable_node(0)).attr_ints("strides", {0, 0});
  TempDir dir;
  const auto file = b.save(dir / "model.onnx");
  EXPECT_TRUE(testing::throws_error([&] { load(file); }, "stride",
                                    file.string() + ": node 'conv1' (Conv): "));
}

TEST(OnnxLoad, B8EmptyOptionalInputIsAbsent) {
  OnnxBuilder b = conv_relu_add();
  b.graph().mutable_node(0)->set_input(2, "");  // no bias
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  EXPECT_EQ(g->nodes()[0].inputs.at(2), "");
  const Tensor x = randn({1, 4, 6, 6});
  Conv2dOptions options;
  options.padding = 1;
  const Tensor expected =
      functional::add(functional::relu(functional::conv2d(x, g->constant("w"), {}, options)), x);
  EXPECT_TRUE(testing::all_close(g->run({x})[0], expected, testing::Tolerance::op_f32()));
}

TEST(OnnxLoad, B9InitializerListedAsInputIsAConstant) {
  OnnxBuilder b = conv_relu_add(11, 3);
  b.input("w", {4, 4, 3, 3}).input("b", {4});
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0].name, "x");
  EXPECT_TRUE(g->is_constant("w"));
  const Tensor x = randn({1, 4, 6, 6});
  EXPECT_TRUE(testing::all_close(g->run({x})[0], reference(*g, x), testing::Tolerance::op_f32()));
}

TEST(OnnxLoad, B10UnusedInitializersAndDeadNodesLoad) {
  OnnxBuilder b = conv_relu_add();
  b.initializer("unused", zeros({3}));
  b.node("Relu", {"x"}, {"dead"}, "dead_relu");
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  EXPECT_TRUE(g->is_constant("unused"));
  EXPECT_EQ(g->nodes().size(), 4u);
  const Tensor x = randn({1, 4, 6, 6});
  EXPECT_TRUE(testing::all_close(g->run({x})[0], reference(*g, x), testing::Tolerance::op_f32()));
}

TEST(OnnxLoad, UnnamedNodesGetDeterministicNames) {
  OnnxBuilder b;
  b.input("x", {1, 2}).output("y");
  b.node("Relu", {"x"}, {"a"});
  b.node("Relu", {"a"}, {"b"}, "Relu_2");  // an explicit name the first rule would also give
  b.node("Relu", {"b"}, {"y"});
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  ASSERT_EQ(g->nodes().size(), 3u);
  EXPECT_EQ(g->nodes()[0].name, "Relu_0");
  EXPECT_EQ(g->nodes()[1].name, "Relu_2");
  EXPECT_EQ(g->nodes()[2].name, "Relu_2_1");
}

TEST(OnnxLoad, FromMemoryWithoutBaseDirRefusesExternalData) {
  const std::string bytes = conv_relu_add().bytes();
  const auto g = load_from_memory(std::as_bytes(std::span(bytes.data(), bytes.size())), "mem.onnx");
  EXPECT_EQ(g->nodes().size(), 3u);
  OnnxBuilder b = conv_relu_add();
  auto& w = b.initializer_proto(0);
  w.clear_raw_data();
  w.set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* e = w.add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  const std::string ext = b.bytes();
  EXPECT_TRUE(testing::throws_error(
      [&] { load_from_memory(std::as_bytes(std::span(ext.data(), ext.size())), "mem.onnx"); },
      "mem.onnx: initializer 'w': external data needs the model's folder"));
}

TEST(OnnxLoad, MissingFileIsAnError) {
  EXPECT_TRUE(testing::throws_error([] { load("/nonexistent/model.onnx"); }, "cannot open"));
  TempDir dir;
  EXPECT_TRUE(testing::throws_error([&] { load(dir.path()); }, "is a directory"));
}

}  // namespace
}  // namespace refold::onnx
