// bfloat16 graph inputs and outputs (test_cast_BFLOAT16_to_FLOAT, test_cast_FLOAT_to_BFLOAT16,
// the castlike *_expanded tests): a data file bound to a value declared BFLOAT16 reads as
// bfloat16 — ONNX's test data stores those as UINT16 bit patterns — Graph::run takes it as the
// declared type, and Cast to BFLOAT16 rounds float32 to nearest even.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"
#include "refold/tensor.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/onnx_builder.h"

namespace refold::onnx {
namespace {

using testing::OnnxBuilder;
using testing::TempDir;
using TP = ::onnx::TensorProto;

std::vector<std::uint16_t> bits_of(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::BFloat16);
  const auto* p = t.data<BFloat16>();
  std::vector<std::uint16_t> out;
  for (std::int64_t i = 0; i < t.numel(); ++i) out.push_back(p[i].bits);
  return out;
}

// x (BFLOAT16) → Cast(to FLOAT) → y: every bfloat16 value widens exactly, NaN and ±Inf included.
TEST(OnnxBfloat16, Bfloat16InputCastToFloatIsExact) {
  OnnxBuilder b(13);
  b.input("x", {5}, TP::BFLOAT16).output("y", {5});
  b.node("Cast", {"x"}, {"y"}, "cast").attr_int("to", TP::FLOAT);
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  const std::vector<std::uint16_t> bits = {0x3EF5, 0xC040, 0x7FC0, 0x7F80, 0xFF80};
  const Tensor x =
      load_tensor(testing::write_uint16_tensor(dir / "input_0.pb", bits), g->inputs[0].elem_type);
  const std::vector<float> y = g->run({x})[0].to_vector();
  ASSERT_EQ(y.size(), 5u);
  for (std::size_t i = 0; i < bits.size(); ++i) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::uint32_t{bits[i]} << 16) << i;
  }
  // Read without the declaration, the same file is integers, which the input refuses.
  EXPECT_TRUE(testing::throws_error([&] { g->run({load_tensor(dir / "input_0.pb")}); },
                                    "Graph: input 'x' is declared with element type 16, given 7"));
}

// A float32 model run in bfloat16 (Graph::to, what `refold bench --dtype bf16` does): its
// weights, its constants (Constant nodes' values too) and its declared inputs and outputs become
// bfloat16, and it gives the
// float32 model's output within the bfloat16 tolerance, optimized or not.
TEST(OnnxBfloat16, AFloatModelRunsInBfloat16AfterTo) {
  Generator gen(3);
  OnnxBuilder b(17);
  b.input("x", {1, 8, 10, 10}).output("y", {1, 16, 1, 1});
  b.initializer("w", randn({16, 8, 3, 3}, {}, gen));
  b.initializer("bias", randn({16}, {}, gen));
  b.initializer("scale", randn({1, 16, 1, 1}, {}, gen));
  b.initializer("shift", randn({1, 16, 1, 1}, {}, gen));
  b.node("Conv", {"x", "w", "bias"}, {"c"}, "conv").attr_ints("pads", {1, 1, 1, 1});
  b.node("Mul", {"c", "scale"}, {"m"}, "mul");
  b.node("Add", {"m", "shift"}, {"a"}, "add");
  b.node("Relu", {"a"}, {"r"}, "relu");
  // A Constant node (a value the loaded graph computes, as an exporter's x / √2 in GELU).
  b.node("Constant", {}, {"k"}, "k").attr_tensor("value", full({1}, 1.4142135f));
  b.node("Div", {"r", "k"}, {"d"}, "div");
  b.node("GlobalAveragePool", {"d"}, {"y"}, "pool");
  TempDir dir;
  const auto path = b.save(dir / "model.onnx");
  const Tensor x = randn({1, 8, 10, 10}, {}, gen);
  const Tensor expected = load(path)->run({x})[0];
  for (bool optimized : {false, true}) {
    SCOPED_TRACE(optimized ? "optimized" : "as loaded");
    const auto g = load(path);
    if (optimized) passes::optimize(*g);
    g->to(DType::BFloat16);
    EXPECT_EQ(g->inputs[0].elem_type, TP::BFLOAT16);
    EXPECT_EQ(g->outputs[0].elem_type, TP::BFLOAT16);
    for (const std::string& name : g->constant_names())
      EXPECT_EQ(g->constant(name).dtype(), DType::BFloat16) << name;
    const Tensor y = g->run({x.to(DType::BFloat16)})[0];
    EXPECT_EQ(y.dtype(), DType::BFloat16);
    EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::bf16()));
    g->to(DType::Float32);  // and back
    EXPECT_EQ(g->inputs[0].elem_type, TP::FLOAT);
    EXPECT_TRUE(testing::all_close(g->run({x})[0], expected, testing::Tolerance::bf16()));
  }
}

// x (FLOAT) → Cast(to BFLOAT16) → y (BFLOAT16): round to nearest, ties to even.
TEST(OnnxBfloat16, FloatCastToBfloat16RoundsToNearestEven) {
  OnnxBuilder b(13);
  b.input("x", {5}).output("y", {5}, TP::BFLOAT16);
  b.node("Cast", {"x"}, {"y"}, "cast").attr_int("to", TP::BFLOAT16);
  TempDir dir;
  const auto g = load(b.save(dir / "model.onnx"));
  // 0x3EF5EEB0 rounds up (truncation would give 0x3EF5); 0x3EF535B8 rounds down; 0x3F808000 and
  // 0x3F818000 are ties (to the even 0x3F80 and 0x3F82); NaN stays NaN.
  const std::vector<std::uint32_t> in = {0x3EF5EEB0, 0x3EF535B8, 0x3F808000, 0x3F818000,
                                         0x7FC00000};
  Tensor x = empty({5});
  for (std::size_t i = 0; i < in.size(); ++i) x.data<float>()[i] = std::bit_cast<float>(in[i]);
  const Tensor y = g->run({x})[0];
  EXPECT_EQ(bits_of(y), (std::vector<std::uint16_t>{0x3EF6, 0x3EF5, 0x3F80, 0x3F82, 0x7FC0}));
  // The expected output, stored as ONNX's test data stores it, reads as the same dtype.
  const Tensor expected = load_tensor(testing::write_uint16_tensor(dir / "output_0.pb", bits_of(y)),
                                      g->outputs[0].elem_type);
  EXPECT_EQ(bits_of(expected), bits_of(y));
}

}  // namespace
}  // namespace refold::onnx
