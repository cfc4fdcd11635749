// Load refuses a model that breaks ONNX's op definitions (src/onnx/type_check.h,
// docs/reliability.md B11–B13): an attribute its op version does not define, an input type the
// op does not take, inputs of one type variable with two types, a declared output or value_info
// type its producer does not compute, and a graph input whose initializer disagrees with it.
#include <gtest/gtest.h>

#include <string>

#include "refold/model_inputs.h"
#include "refold/onnx/onnx.h"
#include "refold/tensor.h"
#include "testing/builders.h"
#include "testing/error_table.h"
#include "testing/onnx_builder.h"

namespace refold::onnx {
namespace {

using testing::OnnxBuilder;
using testing::TempDir;
namespace TP = ::onnx;

std::shared_ptr<graph::Graph> load_model(const OnnxBuilder& b, const TempDir& dir) {
  return load(b.save(dir / "model.onnx"));
}

void expect_refused(const OnnxBuilder& b, const std::string& message) {
  TempDir dir;
  EXPECT_TRUE(testing::throws_error([&] { load_model(b, dir); }, message)) << message;
}

// A Conv over x [1, 3, 8, 8] with a 2×3×3×3 weight.
OnnxBuilder conv_model(int weight_type = TP::TensorProto::FLOAT) {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}).output("y");
  b.initializer("w", ones({2, 3, 3, 3}));
  if (weight_type == TP::TensorProto::FLOAT16) {
    auto& w = b.initializer_proto(0);
    w.set_data_type(TP::TensorProto::FLOAT16);
    w.set_raw_data(std::string(2 * 54, '\0'));
  }
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  return b;
}

TEST(TypeCheck, AnAttributeTheOpDoesNotDefine) {
  OnnxBuilder relu;
  relu.input("x", {1, 4}).output("y");
  relu.node("Relu", {"x"}, {"y"}, "r").attr_float("alpha", 0.5F);
  expect_refused(relu,
                 "node 'r' (Relu): unknown attribute 'alpha': Relu-14 (in effect at "
                 "opset 17) has none");

  OnnxBuilder conv;
  conv.input("x", {1, 3, 8, 8}).output("y");
  conv.initializer("w", ones({2, 3, 3, 3}));
  conv.node("Conv", {"x", "w"}, {"y"}, "conv").attr_ints("paddings", {1, 1, 1, 1});
  expect_refused(conv,
                 "node 'conv' (Conv): unknown attribute 'paddings': Conv-11 (in effect at "
                 "opset 17) has auto_pad, dilations, group, kernel_shape, pads, strides");
}

TEST(TypeCheck, AnAttributeOfAnotherOpVersion) {
  // Clip's bounds became inputs at opset 11; a model importing opset 13 cannot give them as
  // attributes.
  OnnxBuilder b(13);
  b.input("x", {1, 4}).output("y");
  b.node("Clip", {"x"}, {"y"}, "c").attr_float("min", 0.0F);
  expect_refused(b,
                 "node 'c' (Clip): unknown attribute 'min': Clip-13 (in effect at opset 13) "
                 "has none");
  OnnxBuilder ok(18);
  ok.input("x", {1, 4}).output("a").output("b");
  ok.node("Split", {"x"}, {"a", "b"}, "s").attr_int("axis", 1).attr_int("num_outputs", 2);
  TempDir dir;
  EXPECT_NO_THROW(load_model(ok, dir));
}

TEST(TypeCheck, InputsOfOneTypeVariableWithTwoTypes) {
  expect_refused(conv_model(TP::TensorProto::FLOAT16),
                 "node 'conv' (Conv): input 1 'w' (W) is float16, but input 0 'x' (X) is float; "
                 "Conv-11 takes both as one type (T)");
  OnnxBuilder add;
  add.input("a", {2}).input("b", {2}, TP::TensorProto::INT64).output("y");
  add.node("Add", {"a", "b"}, {"y"}, "add");
  expect_refused(add,
                 "node 'add' (Add): input 1 'b' (B) is int64, but input 0 'a' (A) is float; "
                 "Add-14 takes both as one type (T)");
}

TEST(TypeCheck, AnInputTypeTheOpDoesNotTake) {
  OnnxBuilder b;
  b.input("x", {1, 3, 8, 8}, TP::TensorProto::INT64).output("y");
  b.initializer("w", ones({2, 3, 3, 3}));
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  expect_refused(b,
                 "node 'conv' (Conv): input 0 'x' (X) is int64; Conv-11 takes X as one of "
                 "float, float16, double");
}

TEST(TypeCheck, TypesAreFollowedThroughTheGraph) {
  // Shape → int64, Cast to float, then an Add with a float input: consistent.
  OnnxBuilder ok;
  ok.input("x", {1, 4}).output("y");
  ok.node("Shape", {"x"}, {"s"}, "shape");
  ok.node("Cast", {"s"}, {"f"}, "cast").attr_int("to", TP::TensorProto::FLOAT);
  ok.node("Add", {"f", "x"}, {"y"}, "add");
  TempDir dir;
  EXPECT_NO_THROW(load_model(ok, dir));
  // Without the Cast, the Add mixes int64 and float.
  OnnxBuilder bad;
  bad.input("x", {1, 4}).output("y");
  bad.node("Shape", {"x"}, {"s"}, "shape");
  bad.node("Add", {"s", "x"}, {"y"}, "add");
  expect_refused(bad, "node 'add' (Add): input 1 'x' (B) is float, but input 0 's' (A) is int64");
  // A Constant's value gives its type.
  OnnxBuilder constant;
  constant.input("x", {1, 4}).output("y");
  constant.node("Constant", {}, {"c"}, "c").attr_ints("value_ints", {1, 2});
  constant.node("Mul", {"x", "c"}, {"y"}, "mul");
  expect_refused(constant,
                 "node 'mul' (Mul): input 1 'c' (B) is int64, but input 0 'x' (A) is "
                 "float");
}

TEST(TypeCheck, DeclaredOutputAndValueInfoTypes) {
  OnnxBuilder output;
  output.input("x", {1, 4}).output("y");
  output.node("Shape", {"x"}, {"y"}, "shape");
  expect_refused(output,
                 "graph output 'y' is declared float, but node 'shape' (Shape) computes "
                 "int64");
  // With symbolic dims too: types need no shapes.
  OnnxBuilder value;
  value.input("x", {"N", 4}).output("y");
  value.node("Relu", {"x"}, {"r"}, "relu");
  value.node("Relu", {"r"}, {"y"}, "relu2");
  *value.graph().add_value_info() =
      OnnxBuilder::value_info("r", std::nullopt, TP::TensorProto::INT64);
  expect_refused(value, "value 'r' is declared int64, but node 'relu' (Relu) computes float");
}

TEST(TypeCheck, AGraphInputMustAgreeWithItsInitializer) {
  OnnxBuilder shape;
  shape.input("x", {1, 3, 8, 8}).output("y");
  shape.initializer("x", ones({1, 3, 4, 4}));
  shape.node("Relu", {"x"}, {"y"}, "relu");
  expect_refused(shape,
                 "graph input 'x' is declared [1, 3, 8, 8], but its initializer (the "
                 "default value) is [1, 3, 4, 4]");
  OnnxBuilder type;
  type.input("x", {2}, TP::TensorProto::INT64).output("y");
  type.initializer("x", ones({2}));
  type.node("Relu", {"x"}, {"y"}, "relu");
  expect_refused(type,
                 "graph input 'x' is declared int64, but its initializer (the default "
                 "value) is float");
  // Agreeing (a symbolic dim takes any size): a constant, and saying so when named as an input.
  OnnxBuilder ok;
  ok.input("x", {"N", 3}).output("y");
  ok.initializer("x", ones({2, 3}));
  ok.node("Relu", {"x"}, {"y"}, "relu");
  TempDir dir;
  const auto g = load_model(ok, dir);
  EXPECT_TRUE(g->inputs.empty());
  EXPECT_NE(no_such_input(*g, "x").find("'x' is an initializer, listed as a graph input only to "
                                        "give its default value (ONNX IR 3), and refold reads "
                                        "it as a constant"),
            std::string::npos);
}

}  // namespace
}  // namespace refold::onnx
