// The element-wise math ops (src/ops/unary.cpp), the variadic Max/Min/Sum/Mean, comparisons and
// logic (Less … Xor, Not) and the reductions beyond ReduceMean (ReduceSum … ReduceLogSumExp,
// ArgMax/ArgMin): worked examples of each formula, the oneDNN fast path against the reference in
// both layouts, every opset form, and the error messages. The ONNX backend tests of these ops run
// in conformance (tests/conformance).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/onednn/eltwise.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace {

using reference::ReduceOp;
using reference::UnaryOp;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Uniform in [low, high).
Tensor uniform_in(const Shape& sizes, double low, double high, Generator& gen) {
  return reference::arith(uniform(sizes, (high - low) / 2, gen),
                          full({}, static_cast<float>((high + low) / 2)), reference::ArithOp::Add);
}

// Worked values of each formula (x → y), against the reference kernel and the built op.
TEST(OnnxUnary, FormulasOnWorkedExamples) {
  struct Case {
    const char* op;
    std::vector<float> x, y;
  };
  const std::vector<Case> cases = {
      {"Abs", {-2, 0, 3}, {2, 0, 3}},
      {"Neg", {-2, 0, 3}, {2, 0, -3}},
      {"Sign", {-2, 0, 3}, {-1, 0, 1}},
      {"Floor", {-1.5f, 0.5f, 2}, {-2, 0, 2}},
      {"Ceil", {-1.5f, 0.5f, 2}, {-1, 1, 2}},
      {"Round", {0.5f, 1.5f, 2.5f, -0.5f, 2.6f}, {0, 2, 2, -0.0f, 3}},  // halves to even
      {"Reciprocal", {-4, 0.5f}, {-0.25f, 2}},
      {"Sqrt", {0, 4, 9}, {0, 2, 3}},
      {"Exp", {0, 1}, {1, 2.7182817f}},
      {"Log", {1, 2.7182817f}, {0, 1}},
      {"Erf", {0, 1, -1}, {0, 0.8427008f, -0.8427008f}},
      {"Tanh", {0, 1}, {0, 0.7615942f}},
      {"Sin", {0, 1.5707964f}, {0, 1}},
      {"Cos", {0, 3.1415927f}, {1, -1}},
      {"Softplus", {0, 100}, {0.6931472f, 100}},  // ln 2; no overflow for large x
      {"Softsign", {-1, 3}, {-0.5f, 0.75f}},
      // mish(1) = tanh(ln(1 + e)) = 0.8650984; gelu(1) = Φ(1) = 0.8413447.
      {"Mish", {0, 1}, {0, 0.8650984f}},
      {"Elu", {-1, 2}, {-0.63212055f, 2}},  // e⁻¹ − 1
      {"ThresholdedRelu", {0.5f, 1, 2}, {0, 0, 2}},
  };
  for (const Case& c : cases) {
    const Tensor x = values(c.x, {static_cast<std::int64_t>(c.x.size())});
    OpCase op(c.op, {"x"});
    op.opset(18);
    EXPECT_TRUE(all_close(op.run({x}), values(c.y, x.sizes()), Tolerance::op_f32())) << c.op;
  }
  OpCase gelu("Gelu", {"x"});
  gelu.opset(20);
  EXPECT_NEAR(gelu.run({values({1}, {1})}).item(), 0.8413447f, 1e-6f);
  // tanh form: ½·(1 + tanh(√(2/π)·1.044715)) = 0.8411920.
  OpCase gelu_tanh("Gelu", {"x"});
  gelu_tanh.opset(20).text("approximate", "tanh");
  EXPECT_NEAR(gelu_tanh.run({values({1}, {1})}).item(), 0.8411920f, 1e-6f);
  // Selu's defaults: γ·α·(e⁻¹ − 1) = 1.0507·1.67326·(−0.63212) = −1.1113307.
  OpCase selu("Selu", {"x"});
  EXPECT_NEAR(selu.run({values({-1}, {1})}).item(), -1.1113307f, 1e-6f);
  // Celu(α = 2): 2·(e^(−1/2) − 1) = −0.7869387.
  OpCase celu("Celu", {"x"});
  celu.real("alpha", 2.0f);
  EXPECT_NEAR(celu.run({values({-1}, {1})}).item(), -0.7869387f, 1e-6f);
}

// oneDNN's formulas against the double reference, on NCHW and NHWC inputs (the output keeps the
// input's strides), over each function's domain.
TEST(OnnxUnary, OneDnnFastPathMatchesTheReferenceInBothLayouts) {
  struct Case {
    UnaryOp op;
    double alpha, beta, low, high;
  };
  const std::vector<Case> cases = {
      {UnaryOp::Abs, 0, 0, -3, 3},         {UnaryOp::Neg, 0, 0, -3, 3},
      {UnaryOp::Sqrt, 0, 0, 0, 9},         {UnaryOp::Exp, 0, 0, -5, 5},
      {UnaryOp::Tanh, 0, 0, -4, 4},        {UnaryOp::Round, 0, 0, -4, 4},
      {UnaryOp::Mish, 0, 0, -6, 6},        {UnaryOp::Softplus, 0, 0, -6, 6},
      {UnaryOp::Gelu, 0, 0, -5, 5},        {UnaryOp::GeluTanh, 0, 0, -5, 5},
      {UnaryOp::Elu, 0.7, 0, -4, 4},       {UnaryOp::Selu, 1.67, 1.05, -4, 4},
      {UnaryOp::Reciprocal, 0, 0, 0.5, 4}, {UnaryOp::Pow, 2.0, 0, -3, 3},
      {UnaryOp::Pow, 0.5, 0, 0, 3},
  };
  Generator gen(11);
  for (const Case& c : cases) {
    const Tensor x = uniform_in({2, 5, 4, 3}, c.low, c.high, gen);
    const Tensor expected = reference::unary(x, c.op, c.alpha, c.beta);
    for (const Tensor& in : {x, to_channels_last(x)}) {
      std::string declined;
      const Tensor y = onednn::unary(c.op, in, c.alpha, c.beta, &declined);
      ASSERT_TRUE(y.defined()) << reference::unary_name(c.op) << ": " << declined;
      EXPECT_EQ(y.strides(), in.strides()) << reference::unary_name(c.op);
      EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32())) << reference::unary_name(c.op);
    }
  }
  // Functions oneDNN lacks, and int64, decline with a reason; the op then runs the reference.
  std::string declined;
  EXPECT_FALSE(onednn::unary(UnaryOp::Erf, zeros({2}), 0, 0, &declined).defined());
  EXPECT_EQ(declined, "oneDNN has no algorithm for Erf");
  EXPECT_FALSE(onednn::unary(UnaryOp::Abs, i64({-1}), 0, 0, &declined).defined());
  OpCase abs("Abs", {"x"});
  EXPECT_EQ(i64_values(abs.run({i64({-3, 0, std::numeric_limits<std::int64_t>::min()})})),
            (std::vector<std::int64_t>{3, 0, std::numeric_limits<std::int64_t>::min()}));
}

TEST(OnnxUnary, NaNPropagates) {
  for (const char* op : {"Abs", "Sign", "Sqrt", "Erf", "Tanh", "ThresholdedRelu", "Elu"}) {
    OpCase c(op, {"x"});
    EXPECT_TRUE(std::isnan(c.run({values({kNaN}, {1})}).item())) << op;
  }
}

TEST(OnnxPow, ScalarBroadcastAndMixedTypes) {
  const Tensor x = values({1, 2, 3, 4}, {2, 2});
  OpCase scalar("Pow", {"x", "y"});
  scalar.constant("y", values({2}, {}));
  EXPECT_TRUE(all_close(scalar.run({to_channels_last(x.reshape({1, 1, 2, 2}))}),
                        values({1, 4, 9, 16}, {1, 1, 2, 2}), Tolerance::op_f32()));
  OpCase row("Pow", {"x", "y"});
  EXPECT_TRUE(all_close(row.run({x, values({0.5f, 3}, {2})}),
                        values({1, 8, 1.7320508f, 64}, {2, 2}), Tolerance::op_f32()));
  // An int64 exponent of a float base; an integer base keeps its type.
  OpCase mixed("Pow", {"x", "y"});
  EXPECT_TRUE(
      all_close(mixed.run({x, i64({3})}), values({1, 8, 27, 64}, {2, 2}), Tolerance::exact()));
  OpCase integer("Pow", {"x", "y"});
  EXPECT_EQ(i64_values(integer.run({i64({2, 3, -2}), i64({10, 3, 3})})),
            (std::vector<std::int64_t>{1024, 27, -8}));
  OpCase int_float("Pow", {"x", "y"});
  EXPECT_EQ(i64_values(int_float.run({i64({2, 3}), values({2, 0.5f}, {2})})),
            (std::vector<std::int64_t>{4, 1}));  // 3^0.5 = 1.73 truncated
}

TEST(OnnxVariadic, MaxMinSumMeanBroadcastOverAnyInputCount) {
  const Tensor a = values({1, 5, 3, 0}, {2, 2});
  const Tensor b = values({2, 4}, {2});  // broadcast along rows
  const Tensor c = values({-1}, {1});
  OpCase max("Max", {"a", "b", "c"});
  EXPECT_TRUE(all_close(max.run({a, b, c}), values({2, 5, 3, 4}, {2, 2}), Tolerance::exact()));
  OpCase min("Min", {"a", "b"});
  EXPECT_TRUE(all_close(min.run({a, b}), values({1, 4, 2, 0}, {2, 2}), Tolerance::exact()));
  OpCase sum("Sum", {"a", "b", "c"});
  EXPECT_TRUE(all_close(sum.run({a, b, c}), values({2, 8, 4, 3}, {2, 2}), Tolerance::exact()));
  OpCase mean("Mean", {"a", "b"});
  EXPECT_TRUE(
      all_close(mean.run({a, b}), values({1.5f, 4.5f, 2.5f, 2}, {2, 2}), Tolerance::exact()));
  OpCase one("Max", {"a"});
  EXPECT_TRUE(all_close(one.run({a}), a, Tolerance::exact()));
  OpCase nan("Max", {"a", "b"});
  EXPECT_TRUE(std::isnan(nan.run({values({kNaN}, {1}), values({1}, {1})}).item()));
  OpCase ints("Min", {"a", "b"});
  EXPECT_EQ(i64_values(ints.run({i64({3, -7}), i64({5})})), (std::vector<std::int64_t>{3, -7}));
}

TEST(OnnxCompare, ComparisonsAndLogicGiveBooleans) {
  const Tensor a = values({1, 2, 3}, {3});
  const Tensor b = values({2}, {1});
  const std::vector<std::pair<const char*, std::vector<std::int64_t>>> cases = {
      {"Equal", {0, 1, 0}},       {"Less", {1, 0, 0}},           {"Greater", {0, 0, 1}},
      {"LessOrEqual", {1, 1, 0}}, {"GreaterOrEqual", {0, 1, 1}},
  };
  for (const auto& [op, expected] : cases) {
    OpCase c(op, {"a", "b"});
    EXPECT_EQ(i64_values(c.run({a, b})), expected) << op;
  }
  const Tensor p = i64({0, 0, 1, 1});
  const Tensor q = i64({0, 1, 0, 1});
  for (const auto& [op, expected] : std::vector<std::pair<const char*, std::vector<std::int64_t>>>{
           {"And", {0, 0, 0, 1}}, {"Or", {0, 1, 1, 1}}, {"Xor", {0, 1, 1, 0}}}) {
    OpCase c(op, {"p", "q"});
    EXPECT_EQ(i64_values(c.run({p, q})), expected) << op;
  }
  OpCase negate("Not", {"p"});
  EXPECT_EQ(i64_values(negate.run({p})), (std::vector<std::int64_t>{1, 1, 0, 0}));
  OpCase nan("Less", {"a", "b"});
  EXPECT_EQ(i64_values(nan.run({values({kNaN}, {1}), b})), (std::vector<std::int64_t>{0}));
}

// x = iota [2, 3]: [[0, 1, 2], [3, 4, 5]].
TEST(OnnxReduce, EveryReductionOnWorkedExamples) {
  const Tensor x = iota({2, 3});
  const std::vector<std::pair<const char*, std::vector<float>>> over_columns = {
      {"ReduceSum", {3, 12}},
      {"ReduceMax", {2, 5}},
      {"ReduceMin", {0, 3}},
      {"ReduceProd", {0, 60}},
      {"ReduceL1", {3, 12}},
      {"ReduceL2", {2.236068f, 7.0710678f}},  // √5, √50
      {"ReduceSumSquare", {5, 50}},
      {"ReduceLogSum", {1.0986123f, 2.4849067f}},     // ln 3, ln 12
      {"ReduceLogSumExp", {2.4076059f, 5.4076059f}},  // ln(1 + e + e²), + 3
  };
  for (const auto& [op, expected] : over_columns) {
    OpCase attribute(op, {"x"});
    attribute.opset(11).ints("axes", {1}).integer("keepdims", 0);
    EXPECT_TRUE(all_close(attribute.run({x}), values(expected, {2}), Tolerance::op_f32())) << op;
    OpCase input(op, {"x", "axes"});
    input.opset(18).constant("axes", i64({-1}));
    EXPECT_TRUE(all_close(input.run({x}), values(expected, {2, 1}), Tolerance::op_f32())) << op;
  }
  // ReduceSum takes axes as an input from opset 13.
  OpCase sum13("ReduceSum", {"x", "axes"});
  sum13.opset(13).integer("keepdims", 0);
  EXPECT_TRUE(all_close(sum13.run({x, i64({0})}), values({3, 5, 7}, {3}), Tolerance::exact()));
  // No overflow: ln Σ e^x of [1000, 1000] = 1000 + ln 2.
  EXPECT_NEAR(reference::reduce(values({1000, 1000}, {2}), {0}, false, ReduceOp::LogSumExp).item(),
              1000.6931f, 1e-3f);
  // int64: exact.
  EXPECT_EQ(i64_values(reference::reduce(i64({4, 5, 6, 7}, {2, 2}), {0}, false, ReduceOp::Sum)),
            (std::vector<std::int64_t>{10, 12}));
  EXPECT_EQ(i64_values(reference::reduce(i64({4, 9, 6, 7}, {2, 2}), {1}, false, ReduceOp::Max)),
            (std::vector<std::int64_t>{9, 7}));
  // Empty reductions: the identities.
  EXPECT_EQ(reference::reduce(zeros({0}), {0}, false, ReduceOp::Sum).item(), 0.0f);
  EXPECT_EQ(reference::reduce(zeros({0}), {0}, false, ReduceOp::Max).item(), -kInf);
  EXPECT_TRUE(
      std::isnan(reference::reduce(values({1, kNaN}, {2}), {0}, false, ReduceOp::Min).item()));
}

TEST(OnnxArgReduce, ArgMaxArgMinWithTiesAndNaN) {
  const Tensor x = values({1, 3, 3, 0, 2, 0}, {2, 3});
  OpCase argmax("ArgMax", {"x"});
  argmax.integer("axis", 1);
  EXPECT_EQ(argmax.run({x}).sizes(), (Shape{2, 1}));
  EXPECT_EQ(i64_values(argmax.run({x})), (std::vector<std::int64_t>{1, 1}));
  OpCase last("ArgMax", {"x"});
  last.integer("axis", 1).integer("select_last_index", 1).integer("keepdims", 0);
  EXPECT_EQ(i64_values(last.run({x})), (std::vector<std::int64_t>{2, 1}));
  OpCase argmin("ArgMin", {"x"});
  argmin.integer("axis", -1).integer("select_last_index", 1);
  EXPECT_EQ(i64_values(argmin.run({x})), (std::vector<std::int64_t>{0, 2}));
  OpCase columns("ArgMin", {"x"});
  columns.integer("keepdims", 0);  // axis 0
  EXPECT_EQ(i64_values(columns.run({to_channels_last(x.reshape({1, 2, 3, 1})).reshape({2, 3})})),
            (std::vector<std::int64_t>{1, 1, 1}));
  EXPECT_EQ(i64_values(reference::arg_reduce(values({1, kNaN, 5}, {3}), 0, false, false, true)),
            (std::vector<std::int64_t>{1}));
}

TEST(OnnxMath, Errors) {
  expect_errors({
      {"gelu approximate",
       [&] { OpCase("Gelu", {"x"}).opset(20).text("approximate", "erf").module(); },
       "approximate must be 'none' or 'tanh' (got 'erf')"},
      {"gelu before opset 20", [&] { OpCase("Gelu", {"x"}).opset(18).module(); },
       "Gelu at opset 18 is not implemented (refold implements it from opset 20)"},
      {"celu alpha 0", [&] { OpCase("Celu", {"x"}).real("alpha", 0.0f).module(); },
       "Celu's alpha must not be 0"},
      {"elu alpha", [&] { OpCase("Elu", {"x"}).real("alpha", kInf).module(); },
       "alpha must be finite (got inf)"},
      {"unary arity",
       [&] {
         OpCase("Erf", {"x", "y"}).module();
       },
       "expects 1 to 1 inputs, got 2"},
      {"erf of int64", [&] { OpCase("Erf", {"x"}).run({i64({1})}); },
       "Erf: input has dtype int64; expected float32 or bfloat16"},
      {"variadic empty input",
       [&] {
         OpCase("Sum", {"a", ""}).module();
       },
       "input 1 is empty; every input is required"},
      {"variadic broadcast",
       [&] {
         OpCase("Max", {"a", "b"}).run({zeros({2}), zeros({3})});
       },
       "Max: shapes"},
      {"compare dtypes",
       [&] {
         OpCase("Less", {"a", "b"}).run({zeros({2}), i64({1})});
       },
       "Less: inputs have dtypes float32 and int64; they must match"},
      {"not of float", [&] { OpCase("Not", {"a"}).run({zeros({2})}); },
       "Not: X has dtype float32; expected bool (int64 0/1)"},
      {"reduce int64", [&] { reference::reduce(i64({1}), {0}, false, ReduceOp::L2); },
       "ReduceL2: input has dtype int64; expected float32 or bfloat16"},
      {"reduce sum axes attribute at 13",
       [&] { OpCase("ReduceSum", {"x"}).opset(13).ints("axes", {0}).module(); },
       "axes is an input from opset 13 on, not an attribute"},
      {"argmax empty axis",
       [&] {
         reference::arg_reduce(zeros({2, 0}), 1, true, false, true);
       },
       "ArgMax: axis 1 is empty; there is no index to return"},
      {"argmax axis",
       [&] {
         OpCase("ArgMax", {"x"}).integer("axis", 2).run({zeros({2, 3})});
       },
       "ArgMax: axis 2 out of range for a 2-d tensor"},
  });
}

}  // namespace
}  // namespace refold::testing
