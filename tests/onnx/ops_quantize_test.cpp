// QuantizeLinear and DequantizeLinear (src/ops/values.cpp, kernels in
// src/kernels/reference/logic_ops.cpp): values against hand-computed results (round half to
// even, saturation at both ends of each output type, per-tensor, per-axis and blocked scales,
// zero point absent), the output type read from the zero point initializer's ONNX type, the
// error messages, and a QDQ Conv model whose constant DequantizeLinear folds into an ordinary
// constant-weight Conv. The ONNX backend tests test_quantizelinear* / test_dequantizelinear*
// run in conformance.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "onnx/ops_tensor_helpers.h"
#include "refold/error.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/onnx_builder.h"

// The cases below name only the QuantCase fields they set (designated initializers); the rest
// keep their defaults, which GCC's -Wextra would otherwise report.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace refold::testing {
namespace quantize_ops {

using I64s = std::vector<std::int64_t>;
using TP = ::onnx::TensorProto;

// An integer initializer of ONNX type `type` (int32_data, as ONNX stores int8 … int32).
::onnx::TensorProto int_tensor(const std::string& name, const I64s& v, const Shape& dims,
                               int type) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(type);
  for (std::int64_t d : dims) t.add_dims(d);
  for (std::int64_t x : v) t.add_int32_data(static_cast<std::int32_t>(x));
  return t;
}

struct QuantCase {
  std::string op = "QuantizeLinear";
  Shape x_shape;
  int x_type = TP::FLOAT;
  std::vector<float> scale;
  Shape scale_shape;  // {} for a scalar
  I64s zero_point;    // empty: no zero point input
  int zero_point_type = TP::UINT8;
  std::optional<Shape> zero_point_shape;  // absent: scale_shape
  std::int64_t opset = 19;
  std::vector<std::pair<std::string, std::int64_t>> attributes;
};

// A one-node model: x a graph input, scale and zero point initializers.
std::shared_ptr<graph::Graph> load_case(const QuantCase& c) {
  TempDir dir;
  OnnxBuilder b(c.opset);
  std::vector<DimSpec> dims(c.x_shape.begin(), c.x_shape.end());
  const int y_type = c.op == "DequantizeLinear" ? TP::FLOAT
                     : c.zero_point.empty()     ? TP::UINT8
                                                : c.zero_point_type;
  b.input("x", dims, c.x_type).output("y", dims, y_type);
  b.initializer("scale", values(c.scale, c.scale_shape));
  std::vector<std::string> inputs = {"x", "scale"};
  if (!c.zero_point.empty()) {
    *b.graph().add_initializer() = int_tensor(
        "zp", c.zero_point, c.zero_point_shape.value_or(c.scale_shape), c.zero_point_type);
    inputs.push_back("zp");
  }
  NodeRef n = b.node(c.op, inputs, {"y"}, "q");
  for (const auto& [name, v] : c.attributes) n.attr_int(name, v);
  return onnx::load(b.save(dir / "model.onnx"));
}

I64s quantize(const QuantCase& c, const std::vector<float>& x) {
  return i64_values(load_case(c)->run({values(x, c.x_shape)})[0]);
}

std::vector<float> dequantize(QuantCase c, const I64s& x) {
  c.op = "DequantizeLinear";
  c.x_type = c.zero_point.empty() ? TP::INT8 : c.zero_point_type;
  return load_case(c)->run({i64(x, c.x_shape)})[0].to_vector();
}

TEST(OnnxQuantizeLinear, RoundsHalfToEvenAndSaturatesToUint8WithoutAZeroPoint) {
  const QuantCase c{.x_shape = {8}, .scale = {1.0f}};
  EXPECT_EQ(quantize(c, {2.5f, -2.5f, 3.5f, 0.5f, 1.5f, 300.0f, -5.0f, 254.5f}),
            (I64s{2, 0, 4, 0, 2, 255, 0, 254}));
}

TEST(OnnxQuantizeLinear, Int8ZeroPointSetsTheRange) {
  const QuantCase c{
      .x_shape = {7}, .scale = {1.0f}, .zero_point = {0}, .zero_point_type = TP::INT8};
  EXPECT_EQ(quantize(c, {2.5f, -2.5f, -3.5f, 127.5f, -128.5f, 1000.0f, -1000.0f}),
            (I64s{2, -2, -4, 127, -128, 127, -128}));
  // x / 0.5 rounds, then the zero point 3 is added: 2.5 → 2 → 5; −1.5 → −2 → 1.
  const QuantCase half{
      .x_shape = {2}, .scale = {0.5f}, .zero_point = {3}, .zero_point_type = TP::INT8};
  EXPECT_EQ(quantize(half, {1.25f, -0.75f}), (I64s{5, 1}));
}

// int32 is not a QuantizeLinear output type (the load-time type check refuses it).
TEST(OnnxQuantizeLinear, SixteenBitRanges) {
  QuantCase c{.x_shape = {3}, .scale = {1.0f}, .zero_point = {0}, .opset = 21};
  c.zero_point_type = TP::INT16;
  EXPECT_EQ(quantize(c, {40000.0f, -40000.0f, 7.5f}), (I64s{32767, -32768, 8}));
  c.zero_point_type = TP::UINT16;
  EXPECT_EQ(quantize(c, {70000.0f, -1.0f, 65534.5f}), (I64s{65535, 0, 65534}));
}

// A zero point made by a Constant node: its tensor's ONNX type (int8 here) sets the range.
TEST(OnnxQuantizeLinear, ZeroPointFromAConstantNodeSetsTheType) {
  TempDir dir;
  OnnxBuilder b(13);
  b.input("x", {3}).output("y", {3}, TP::INT8);
  b.initializer("scale", values({1.0f}, {}));
  auto* constant = b.graph().add_node();
  constant->set_op_type("Constant");
  constant->add_output("zp");
  auto* value = constant->add_attribute();
  value->set_name("value");
  value->set_type(::onnx::AttributeProto::TENSOR);
  *value->mutable_t() = int_tensor("", {-1}, {}, TP::INT8);
  b.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"}, "q");
  auto g = onnx::load(b.save(dir / "model.onnx"));
  EXPECT_EQ(i64_values(g->run({values({-200, 5.5f, 200}, {3})})[0]), (I64s{-128, 5, 127}));
}

TEST(OnnxQuantizeLinear, PerAxisScaleAndZeroPoint) {
  // axis 1 (the default) of [2, 3]: column j uses scale[j] and zero point[j].
  const QuantCase c{.x_shape = {2, 3},
                    .scale = {1.0f, 2.0f, 4.0f},
                    .scale_shape = {3},
                    .zero_point = {0, 10, 128}};
  EXPECT_EQ(quantize(c, {1, 2, 4, -1, 5, -600}), (I64s{1, 11, 129, 0, 12, 0}));
  // axis 0 (and −2, its negative spelling) of [2, 3]: row i uses scale[i].
  for (std::int64_t axis : {0, -2}) {
    const QuantCase rows{.x_shape = {2, 3},
                         .scale = {1.0f, 10.0f},
                         .scale_shape = {2},
                         .attributes = {{"axis", axis}}};
    EXPECT_EQ(quantize(rows, {1, 2, 3, 10, 25, 35}), (I64s{1, 2, 3, 1, 2, 4})) << axis;
  }
}

TEST(OnnxQuantizeLinear, BlockedScale) {
  // block_size 2 along axis 1 of [2, 4]: scale [2, 2], x[i, j] uses scale[i, j / 2].
  const QuantCase c{.x_shape = {2, 4},
                    .scale = {1, 10, 2, 100},
                    .scale_shape = {2, 2},
                    .opset = 21,
                    .attributes = {{"axis", 1}, {"block_size", 2}}};
  EXPECT_EQ(quantize(c, {1, 2, 30, 40, 4, 6, 300, 400}), (I64s{1, 2, 3, 4, 2, 3, 3, 4}));
  EXPECT_EQ(dequantize(c, {1, 2, 3, 4, 2, 3, 3, 4}),
            (std::vector<float>{1, 2, 30, 40, 4, 6, 300, 400}));
}

TEST(OnnxDequantizeLinear, PerTensorPerAxisAndNoZeroPoint) {
  const QuantCase none{.x_shape = {3}, .scale = {0.25f}};
  EXPECT_EQ(dequantize(none, {0, 255, -7}), (std::vector<float>{0, 63.75f, -1.75f}));
  const QuantCase uint8{.x_shape = {2}, .scale = {0.5f}, .zero_point = {128}};
  EXPECT_EQ(dequantize(uint8, {0, 255}), (std::vector<float>{-64, 63.5f}));
  // One value as [1] beside a scalar zero point (ORT's quantizer writes biases so): per-tensor.
  const QuantCase one{.x_shape = {2},
                      .scale = {0.5f},
                      .scale_shape = {1},
                      .zero_point = {128},
                      .zero_point_shape = Shape{}};
  EXPECT_EQ(dequantize(one, {0, 255}), (std::vector<float>{-64, 63.5f}));
  const QuantCase int32{
      .x_shape = {2}, .scale = {0.5f}, .zero_point = {0}, .zero_point_type = TP::INT32};
  EXPECT_EQ(dequantize(int32, {100000, -3}), (std::vector<float>{50000, -1.5f}));
  // axis 0 of [2, 2] int8: (x − zp[i]) · scale[i].
  const QuantCase rows{.x_shape = {2, 2},
                       .scale = {0.5f, 2.0f},
                       .scale_shape = {2},
                       .zero_point = {1, -3},
                       .zero_point_type = TP::INT8,
                       .attributes = {{"axis", 0}}};
  EXPECT_EQ(dequantize(rows, {-128, 127, 5, 0}), (std::vector<float>{-64.5f, 63, 16, 6}));
}

TEST(OnnxQuantizeLinear, ChannelsLastInputKeepsItsLayoutAndValues) {
  const Tensor x = random({1, 3, 2, 2}, 7);
  OpCase q("QuantizeLinear", {"x", "scale"});
  q.constant("scale", values({0.01f}, {}));
  const Tensor r = q.run({to_channels_last(x)});
  EXPECT_TRUE(is_channels_last(r));
  EXPECT_EQ(i64_values(r), i64_values(q.run({x})));
}

TEST(OnnxQuantizeLinear, Errors) {
  expect_errors({
      {"zero point of unknown type",
       [] {
         OpCase q("QuantizeLinear", {"x", "scale", "zp"});
         q.module();
       },
       "unsupported: y_zero_point 'zp' has no known ONNX type"},
      {"axis before opset 13",
       [] {
         load_case({.x_shape = {2}, .scale = {1.0f}, .opset = 10, .attributes = {{"axis", 0}}});
       },
       "axis needs opset 13 (the model's opset is 10)"},
      {"block_size before opset 21",
       [] {
         load_case({.x_shape = {2}, .scale = {1.0f}, .attributes = {{"block_size", 2}}});
       },
       "block_size needs opset 21 (the model's opset is 19)"},
      {"output_dtype differs",
       [] {
         load_case({.x_shape = {2},
                    .scale = {1.0f},
                    .zero_point = {0},
                    .opset = 21,
                    .attributes = {{"output_dtype", TP::INT8}}});
       },
       "output_dtype 3 differs from y_zero_point 'zp''s type uint8"},
      {"float8 output",
       [] {
         load_case(
             {.x_shape = {2}, .scale = {1.0f}, .opset = 21, .attributes = {{"output_dtype", 17}}});
       },
       "unsupported: output_dtype of type float8 (data type 17)"},
      {"per-axis scale of the wrong length",
       [] {
         quantize({.x_shape = {2, 3}, .scale = {1.0f, 2.0f}, .scale_shape = {2}},
                  {1, 2, 3, 4, 5, 6});
       },
       "QuantizeLinear: a per-axis scale must be 1-d of x's size 3 along axis 1, got shape [2]"},
      {"axis out of range",
       [] {
         quantize({.x_shape = {2},
                   .scale = {1.0f, 2.0f},
                   .scale_shape = {2},
                   .attributes = {{"axis", 1}}},
                  {1, 2});
       },
       "QuantizeLinear: axis 1 is out of range for x of rank 1"},
      {"blocked scale of the wrong shape",
       [] {
         quantize({.x_shape = {2, 4},
                   .scale = {1, 2},
                   .scale_shape = {2, 1},
                   .opset = 21,
                   .attributes = {{"block_size", 2}}},
                  {1, 2, 3, 4, 5, 6, 7, 8});
       },
       "a blocked scale (block_size 2) must have shape [2, 2], got [2, 1]"},
      {"dequantize output_dtype",
       [] {
         load_case({.op = "DequantizeLinear",
                    .x_shape = {2},
                    .x_type = TP::INT8,
                    .scale = {1.0f},
                    .opset = 21,
                    .attributes = {{"output_dtype", TP::FLOAT}}});
       },
       "unsupported: output_dtype"},
  });
}

// The QDQ form ONNX Runtime's quantizer writes: x → Q → DQ → Conv(DQ(int8 W), bias). Constant
// folding turns DQ(W) into a float constant, so the Conv becomes an ordinary constant-weight
// conv; the optimized graph matches the unoptimized one.
TEST(OnnxQdqModel, ConstantWeightDequantizeFoldsIntoTheConv) {
  TempDir dir;
  OnnxBuilder b(13);
  b.input("x", {1, 2, 5, 5}).output("y");
  b.initializer("x_scale", values({0.05f}, {}));
  *b.graph().add_initializer() = int_tensor("x_zp", {128}, {}, TP::UINT8);
  I64s w;
  for (int i = 0; i < 3 * 2 * 3 * 3; ++i) w.push_back((i * 37) % 255 - 127);
  *b.graph().add_initializer() = int_tensor("w_q", w, {3, 2, 3, 3}, TP::INT8);
  b.initializer("w_scale", values({0.01f, 0.02f, 0.005f}, {3}));
  *b.graph().add_initializer() = int_tensor("w_zp", {0, 0, 0}, {3}, TP::INT8);
  b.initializer("bias", values({0.1f, -0.2f, 0.3f}, {3}));
  b.node("QuantizeLinear", {"x", "x_scale", "x_zp"}, {"x_q"}, "quant_x");
  b.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x_dq"}, "dequant_x");
  b.node("DequantizeLinear", {"w_q", "w_scale", "w_zp"}, {"w"}, "dequant_w").attr_int("axis", 0);
  b.node("Conv", {"x_dq", "w", "bias"}, {"y"}, "conv").attr_ints("pads", {1, 1, 1, 1});
  auto g = onnx::load(b.save(dir / "model.onnx"));

  const Tensor x = random({1, 2, 5, 5}, 3);
  const Tensor expected = g->run({x})[0];
  passes::optimize(*g);
  g->verify();
  int convs = 0;
  for (const graph::Node& node : g->nodes()) {
    EXPECT_NE(node.name, "dequant_w") << g->dump();
    if (node.op_type != "Conv") continue;
    ++convs;
    EXPECT_TRUE(g->is_constant(node.inputs[1])) << g->dump();
  }
  EXPECT_EQ(convs, 1) << g->dump();
  EXPECT_TRUE(model_close(g->run({x})[0], expected));
}

}  // namespace quantize_ops
}  // namespace refold::testing
