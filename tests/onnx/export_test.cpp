// onnx::save: "nothing lost" (docs/reliability.md, promises after optimization) — byte-identical
// round trips of untouched models, original protos for untouched parts, new nodes and constants
// written from their fields, the drop policy for unread constants, and whole-or-absent files.
#include "testing/onnx_builder.h"  // first: it sets the ONNX_ML definitions

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "onnx/source_model.h"
#include "ops/op.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/onnx/onnx.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::onnx {
namespace {

namespace fs = std::filesystem;
using testing::OnnxBuilder;
using testing::TempDir;

// x → Conv(3×3, pad 1, bias) → Relu → Add(·, x) → y, with a full header.
OnnxBuilder rich_model() {
  OnnxBuilder b(17, 8);
  Generator gen(11);
  auto& m = b.model();
  m.set_producer_version("2.1");
  m.set_domain("org.example");
  m.set_model_version(3);
  m.set_doc_string("a test model");
  auto* meta = m.add_metadata_props();
  meta->set_key("author");
  meta->set_value("refold");
  auto* extra = m.add_opset_import();
  extra->set_domain("com.example");
  extra->set_version(1);
  b.graph().set_doc_string("graph doc");
  b.input("x", {"batch", 4, 6, 6}).output("y", {"batch", 4, 6, 6});
  b.initializer("w", testing::uniform({4, 4, 3, 3}, 0.3, gen));
  b.initializer("b", testing::uniform({4}, 0.3, gen));
  b.node("Conv", {"x", "w", "b"}, {"c"}, "conv1")
      .attr_ints("pads", {1, 1, 1, 1})
      .attr_ints("strides", {1, 1});
  b.node("Relu", {"c"}, {"r"});  // unnamed
  b.node("Add", {"r", "x"}, {"y"}, "add1").proto().set_doc_string("residual");
  *b.graph().add_value_info() =
      OnnxBuilder::value_info("c", std::vector<testing::DimSpec>{"batch", 4, 6, 6}, 1);
  return b;
}

Tensor run(graph::Graph& g, const Tensor& x) { return g.run({x})[0]; }

TEST(OnnxExport, UntouchedModelIsByteIdentical) {
  TempDir dir;
  const OnnxBuilder b = rich_model();
  const auto in = b.save(dir / "in.onnx");
  const auto g = load(in);
  EXPECT_EQ(g->nodes()[1].name, "Relu_1");
  save(*g, dir / "out.onnx");
  EXPECT_EQ(testing::read_file(dir / "out.onnx"), testing::read_file(in));

  // And again from the saved file: the same bytes, the same numbers.
  const auto g2 = load(dir / "out.onnx");
  save(*g2, dir / "out2.onnx");
  EXPECT_EQ(testing::read_file(dir / "out2.onnx"), testing::read_file(in));
  const Tensor x = randn({2, 4, 6, 6});
  EXPECT_TRUE(testing::all_close(run(*g2, x), run(*g, x), testing::Tolerance::exact()));
}

// LoadOptions::keep_source_data false (what a Session loads with): the parsed file keeps no
// initializer data, and saving writes every constant from its tensor — a valid model that
// computes exactly the same, in the file's data types.
TEST(OnnxExport, ReleasedSourceDataIsWrittenFromTheTensors) {
  TempDir dir;
  const OnnxBuilder b = rich_model();
  const auto in = b.save(dir / "in.onnx");
  LoadOptions lean;
  lean.keep_source_data = false;
  const auto g = load(in, lean);
  ASSERT_TRUE(g->source->data_released);
  ASSERT_GT(g->source->model.graph().initializer_size(), 0);
  for (const auto& t : g->source->model.graph().initializer()) {
    EXPECT_TRUE(t.raw_data().empty() && t.float_data().empty()) << t.name();
    EXPECT_NE(t.data_type(), 0) << t.name();
  }
  save(*g, dir / "out.onnx");
  const auto again = load(dir / "out.onnx");
  ASSERT_EQ(again->constant_names(), load(in)->constant_names());
  for (const std::string& name : again->constant_names()) {
    EXPECT_TRUE(
        testing::all_close(again->constant(name), g->constant(name), testing::Tolerance::exact()))
        << name;
  }
  const Tensor x = randn({2, 4, 6, 6});
  EXPECT_TRUE(testing::all_close(run(*again, x), run(*load(in), x), testing::Tolerance::exact()));
}

TEST(OnnxExport, Ir3InitializerInputsAreKept) {
  OnnxBuilder b = rich_model();
  b.model().set_ir_version(3);
  b.input("w", {4, 4, 3, 3}).input("b", {4});
  TempDir dir;
  const auto in = b.save(dir / "in.onnx");
  const auto g = load(in);
  EXPECT_EQ(g->inputs.size(), 1u);
  save(*g, dir / "out.onnx");
  EXPECT_EQ(testing::read_file(dir / "out.onnx"), testing::read_file(in));
}

TEST(OnnxExport, FusedNodeWritesItsParts) {
  TempDir dir;
  const auto in = rich_model().save(dir / "in.onnx");
  const auto g = load(in);
  // Conv + Relu fused into one node that keeps both as parts.
  graph::Node fused;
  fused.name = "conv1_relu";
  fused.op_type = "Conv";
  fused.inputs = g->nodes()[0].inputs;
  fused.outputs = g->nodes()[1].outputs;
  fused.parts = {g->nodes()[0], g->nodes()[1]};
  fused.module = g->nodes()[0].module;
  fused.origin = "conv1 + Relu_1";
  g->erase_node(1);
  g->erase_node(0);
  g->insert_node(0, std::move(fused));
  save(*g, dir / "out.onnx");
  EXPECT_EQ(testing::read_file(dir / "out.onnx"), testing::read_file(in));
}

TEST(OnnxExport, ChangedAndNewObjectsAreWrittenFromTheirFields) {
  TempDir dir;
  const auto in = rich_model().save(dir / "in.onnx");
  const auto g = load(in);
  ::onnx::ModelProto original;
  ASSERT_TRUE(original.ParseFromString(testing::read_file(in)));

  // A changed weight (source -1), a new Relu between relu and add, add rewired.
  const Tensor w2 = testing::iota({4, 4, 3, 3}, -70.0f);
  g->set_constant("w", w2);
  graph::Node extra;
  extra.name = "relu_extra";
  extra.op_type = "Relu";
  extra.inputs = {"r"};
  extra.outputs = {"r2"};
  extra.origin = "test";
  extra.module = ops::build_module({extra, *g, 17});
  g->insert_node(2, std::move(extra));
  g->node(3).inputs[0] = "r2";
  save(*g, dir / "out.onnx");

  ::onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(testing::read_file(dir / "out.onnx")));
  ASSERT_EQ(out.graph().node_size(), 4);
  EXPECT_EQ(out.graph().node(0).SerializeAsString(), original.graph().node(0).SerializeAsString());
  EXPECT_EQ(out.graph().node(1).SerializeAsString(), original.graph().node(1).SerializeAsString());
  EXPECT_EQ(out.graph().node(2).name(), "relu_extra");
  EXPECT_EQ(out.graph().node(2).doc_string(), "test");
  EXPECT_EQ(out.graph().node(3).name(), "add1");
  EXPECT_EQ(out.graph().node(3).input(0), "r2");
  // b untouched: the original proto; w re-serialized in its original type.
  ASSERT_EQ(out.graph().initializer_size(), 2);
  EXPECT_EQ(out.graph().initializer(0).name(), "w");
  EXPECT_NE(out.graph().initializer(0).raw_data(), original.graph().initializer(0).raw_data());
  EXPECT_EQ(out.graph().initializer(1).SerializeAsString(),
            original.graph().initializer(1).SerializeAsString());
  // The header and interface are kept.
  EXPECT_EQ(out.metadata_props(0).value(), "refold");
  EXPECT_EQ(out.opset_import_size(), 2);
  EXPECT_EQ(out.graph().input(0).SerializeAsString(),
            original.graph().input(0).SerializeAsString());

  const auto back = load(dir / "out.onnx");
  EXPECT_TRUE(testing::all_close(back->constant("w"), w2, testing::Tolerance::exact()));
  // (g's Conv module still holds the old weight: set_constant swaps the graph's handle only.)
  const Tensor x = randn({1, 4, 6, 6});
  Conv2dOptions options;
  options.padding = 1;
  const Tensor expected =
      functional::add(functional::relu(functional::conv2d(x, w2, back->constant("b"), options)), x);
  EXPECT_TRUE(testing::all_close(run(*back, x), expected, testing::Tolerance::op_f32()));
}

TEST(OnnxExport, UnreadConstantsAndTheirValueInfoAreDropped) {
  OnnxBuilder b = rich_model();
  b.initializer("unused", zeros({3}));
  TempDir dir;
  const auto g = load(b.save(dir / "in.onnx"));
  EXPECT_TRUE(g->is_constant("unused"));
  save(*g, dir / "out.onnx");
  const auto back = load(dir / "out.onnx");
  EXPECT_FALSE(back->is_constant("unused"));
  EXPECT_EQ(testing::read_file(dir / "out.onnx"),
            testing::read_file(rich_model().save(dir / "plain.onnx")));
}

// refold holds bool and int32 values as int64; a constant folded from a value of the file is
// written in the element type that value had, so its readers' type checks still pass on reload
// (RT-DETR: a bool Constant node read by Xor came back INT64 and the optimized file was refused).
TEST(OnnxExport, FoldedConstantsKeepTheirFileElementType) {
  OnnxBuilder b;
  b.input("x", {2}).input("n", {2}, ::onnx::TensorProto::INT32);
  b.output("y", {2}, ::onnx::TensorProto::BOOL).output("m", {2}, ::onnx::TensorProto::INT32);
  b.initializer("zero", zeros({}));
  b.node("Constant", {}, {"flags"}, "flags").proto().add_attribute()->CopyFrom([] {
    ::onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(::onnx::AttributeProto::TENSOR);
    ::onnx::TensorProto& t = *a.mutable_t();
    t.set_data_type(::onnx::TensorProto::BOOL);
    t.add_dims(2);
    t.set_raw_data(std::string("\x01\x00", 2));
    return a;
  }());
  b.node("Less", {"x", "zero"}, {"negative"}, "less");
  b.node("Xor", {"negative", "flags"}, {"y"}, "xor");
  b.initializer("two", testing::iota({2}));
  b.node("Cast", {"two"}, {"two_i32"}, "cast").attr_int("to", ::onnx::TensorProto::INT32);
  b.node("Add", {"n", "two_i32"}, {"m"}, "add");
  TempDir dir;
  const auto g = load(b.save(dir / "in.onnx"));
  passes::fold_constants(*g);
  ASSERT_TRUE(g->is_constant("flags"));
  ASSERT_TRUE(g->is_constant("two_i32"));
  save(*g, dir / "out.onnx");
  ::onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(testing::read_file(dir / "out.onnx")));
  std::map<std::string, int> types;
  for (const auto& t : out.graph().initializer()) types[t.name()] = t.data_type();
  EXPECT_EQ(types["flags"], ::onnx::TensorProto::BOOL);
  EXPECT_EQ(types["two_i32"], ::onnx::TensorProto::INT32);
  const auto back = load(dir / "out.onnx");  // the type check passes
  const Tensor x = from_values(std::vector<float>{-1, 2}, {2});
  Tensor n = empty({2}, DType::Int64);
  n.data<std::int64_t>()[0] = 5;
  n.data<std::int64_t>()[1] = -7;
  const std::vector<Tensor> before = g->run({x, n}), after = back->run({x, n});
  EXPECT_EQ(after[0].to_vector(), (std::vector<float>{0, 0}));  // (−1 < 0) ⊕ 1, (2 < 0) ⊕ 0
  EXPECT_EQ(after[0].to_vector(), before[0].to_vector());
  EXPECT_EQ(after[1].to_vector(), before[1].to_vector());
}

TEST(OnnxExport, GraphBuiltInCppGetsADefaultHeader) {
  auto g = std::make_shared<graph::Graph>();
  g->inputs.push_back({"x", 1, std::vector<graph::Dim>{{-1, "N"}, {3, ""}}});
  g->outputs.push_back({"y", 1, std::nullopt});
  graph::Node relu;
  relu.name = "relu";
  relu.op_type = "Relu";
  relu.inputs = {"x"};
  relu.outputs = {"y"};
  relu.module = ops::build_module({relu, *g, 17});
  g->add_node(std::move(relu));
  TempDir dir;
  save(*g, dir / "made.onnx");
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(testing::read_file(dir / "made.onnx")));
  EXPECT_EQ(m.ir_version(), 8);
  ASSERT_EQ(m.opset_import_size(), 1);
  EXPECT_EQ(m.opset_import(0).version(), 17);
  EXPECT_EQ(m.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "N");
  const auto back = load(dir / "made.onnx");
  const Tensor x = testing::values({-1.0f, 0.5f, 2.0f}, {1, 3});
  EXPECT_EQ(back->run({x})[0].to_vector(), (std::vector<float>{0.0f, 0.5f, 2.0f}));
}

TEST(OnnxExport, ExternalDataStaysInsideTheOutputFolder) {
  TempDir dir;
  OnnxBuilder b = rich_model();
  auto& w = b.initializer_proto(0);
  testing::write_file(dir / "w.bin", w.raw_data());
  w.clear_raw_data();
  w.set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* e = w.add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  const auto in = b.save(dir / "in.onnx");
  const auto g = load(in);
  // Same folder: the reference is copied unchanged.
  save(*g, dir / "out.onnx");
  EXPECT_EQ(testing::read_file(dir / "out.onnx"), testing::read_file(in));
  // Another folder: the bytes are written inline.
  TempDir other;
  save(*g, other / "out.onnx");
  ::onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(testing::read_file(other / "out.onnx")));
  EXPECT_EQ(m.graph().initializer(0).data_location(), ::onnx::TensorProto::DEFAULT);
  EXPECT_EQ(m.graph().initializer(0).external_data_size(), 0);
  EXPECT_EQ(m.graph().initializer(0).raw_data(), testing::read_file(dir / "w.bin"));
  const auto back = load(other / "out.onnx");
  const Tensor x = randn({1, 4, 6, 6});
  EXPECT_TRUE(testing::all_close(run(*back, x), run(*g, x), testing::Tolerance::exact()));
}

TEST(OnnxExport, FailedSaveLeavesNothingBehind) {
  TempDir dir;
  const auto g = load(rich_model().save(dir / "in.onnx"));
  save(*g, dir / "out.onnx");
  const std::string before = testing::read_file(dir / "out.onnx");
  // A new node whose tensor attribute cannot be written.
  graph::Node bad;
  bad.name = "bad";
  bad.op_type = "Relu";
  bad.inputs = {"y"};
  bad.outputs = {"z"};
  bad.attributes.set("value", Tensor{});
  bad.module = g->nodes()[1].module;
  g->erase_node(1);
  g->add_node(std::move(bad));
  EXPECT_TRUE(testing::throws_error([&] { save(*g, dir / "out.onnx"); }, "undefined",
                                    (dir / "out.onnx").string() + ": "));
  EXPECT_EQ(testing::read_file(dir / "out.onnx"), before);
  int files = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 2);  // in.onnx, out.onnx: no temporary left
  EXPECT_TRUE(
      testing::throws_error([&] { save(*load(dir / "in.onnx"), dir / "no" / "such" / "dir.onnx"); },
                            "cannot create a temporary file"));
}

}  // namespace
}  // namespace refold::onnx
