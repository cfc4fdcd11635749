// BatchNormalization, the activations and Add/Sub/Mul/Div builders: which module each becomes,
// its values against the reference kernels (NCHW and channels_last), and every error.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/reference/onnx_ops.h"
#include "onnx/ops_cnn_helpers.h"
#include "onnx/ops_tensor_helpers.h"
#include "ops/activation.h"
#include "ops/arithmetic.h"
#include "ops/batch_norm.h"
#include "refold/nn/activation.h"
#include "refold/nn/basic.h"
#include "refold/nn/batchnorm.h"
#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold {
namespace {

using testing::i64;
using testing::i64_values;
using testing::OpCase;
using testing::random;
using testing::to_channels_last;
using testing::Tolerance;

// ---- BatchNormalization

struct BnParams {
  Tensor scale = random({5}, 1), bias = random({5}, 2), mean = random({5}, 3);
  Tensor var = add(random({5}, 4, 0.5), full({5}, 1.0f));
  static Tensor add(const Tensor& a, const Tensor& b) { return reference::add(a, b); }
};

OpCase bn_case(const BnParams& p) {
  OpCase c("BatchNormalization", {"x", "s", "b", "m", "v"});
  c.constant("s", p.scale).constant("b", p.bias).constant("m", p.mean).constant("v", p.var);
  return c;
}

TEST(OnnxBatchNormalization, ConstantParametersBecomeBatchNorm2dSharingThem) {
  const BnParams p;
  const Tensor x = random({2, 5, 4, 3}, 5);
  OpCase c = bn_case(p);
  c.real("epsilon", 1e-3f);
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>(c.module());
  ASSERT_NE(bn, nullptr);
  EXPECT_FLOAT_EQ(static_cast<float>(bn->options().eps()), 1e-3f);
  EXPECT_TRUE(bn->weight().is_same(c.graph().constant("s")));
  EXPECT_TRUE(bn->running_var().is_same(c.graph().constant("v")));
  EXPECT_EQ(bn->running_mean().data_ptr(), p.mean.data_ptr());
  const Tensor expected = reference::batch_norm(x, p.mean, p.var, p.scale, p.bias, 1e-3f);
  EXPECT_TRUE(c.close_in_both_layouts(x, expected));
}

TEST(OnnxBatchNormalization, RuntimeParametersBecomeAnOp) {
  const BnParams p;
  const Tensor x = random({1, 5, 3, 3}, 6);
  OpCase c("BatchNormalization", {"x", "s", "b", "m", "v"});
  ASSERT_NE(std::dynamic_pointer_cast<ops::BatchNormalization>(c.module()), nullptr);
  const Tensor expected = reference::batch_norm(x, p.mean, p.var, p.scale, p.bias, 1e-5f);
  EXPECT_TRUE(testing::all_close(c.run({x, p.scale, p.bias, p.mean, p.var}), expected,
                                 Tolerance::op_f32()));
  EXPECT_TRUE(testing::all_close(c.run({to_channels_last(x), p.scale, p.bias, p.mean, p.var}),
                                 expected, Tolerance::op_f32()));
}

// training_mode=1: each channel normalized by the batch's own mean and population variance (over
// N and the spatial dims), and the running statistics carried on with `momentum`. Channel 0 holds
// 1, 2 | 3, 4 (mean 2.5, var 1.25), channel 1 0, 2 | 4, 6 (mean 3, var 5).
TEST(OnnxBatchNormalization, TrainingModeUsesTheBatchsOwnStatistics) {
  OpCase c("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "running_mean", "running_var"});
  c.constant("s", testing::values({2, 1}, {2})).constant("b", testing::values({0, 1}, {2}));
  c.constant("m", testing::values({1, 1}, {2})).constant("v", testing::values({1, 1}, {2}));
  c.integer("training_mode", 1).real("momentum", 0.5f).real("epsilon", 0.0f);
  const Tensor x = testing::values({1, 2, 0, 2, 3, 4, 4, 6}, {2, 2, 1, 2});
  const float s0 = 2 / std::sqrt(1.25f), s1 = 1 / std::sqrt(5.0f);
  const Tensor y = testing::values({-1.5f * s0, -0.5f * s0, -3 * s1 + 1, -1 * s1 + 1, 0.5f * s0,
                                    1.5f * s0, 1 * s1 + 1, 3 * s1 + 1},
                                   {2, 2, 1, 2});
  for (const Tensor& input : {x, to_channels_last(x)}) {
    const std::vector<Tensor> out = c.run_all({input});
    ASSERT_EQ(out.size(), 3u);
    EXPECT_TRUE(testing::all_close(out[0], y, Tolerance::op_f32()));
    // 1·0.5 + 2.5·0.5, 1·0.5 + 3·0.5; 1·0.5 + 1.25·0.5, 1·0.5 + 5·0.5
    EXPECT_TRUE(testing::all_close(out[1], testing::values({1.75f, 2}, {2}), Tolerance::op_f32()));
    EXPECT_TRUE(testing::all_close(out[2], testing::values({1.125f, 3}, {2}), Tolerance::op_f32()));
  }
  // One image is InstanceNormalization with the BN's scale and bias.
  const BnParams p;
  OpCase one = bn_case(p);
  one.integer("training_mode", 1);
  const Tensor image = random({1, 5, 4, 3}, 9);
  EXPECT_TRUE(
      one.close_in_both_layouts(image, reference::group_norm(image, p.scale, p.bias, 5, 1e-5)));
}

TEST(OnnxBatchNormalization, Errors) {
  const BnParams p;
  auto build = [&](auto configure) {
    return [=] {
      OpCase c = bn_case(p);
      configure(c);
      c.module();
    };
  };
  auto with = [&](const char* name, Tensor t) {
    return [=] {
      OpCase c = bn_case(p);
      c.constant(name, t);
      c.module();
    };
  };
  testing::expect_errors({
      {"training_mode 2", build([](OpCase& c) { c.integer("training_mode", 2); }),
       "training_mode must be 0 or 1 (got 2)"},
      {"F21 training outputs without training_mode", build([](OpCase& c) {
         c.node().outputs = {"y", "running_mean", "running_var"};
       }),
       "unsupported: output 1 ('running_mean') is a training output without training_mode=1"},
      {"training_mode with four outputs", build([](OpCase& c) {
         c.integer("training_mode", 1);
         c.node().outputs = {"y", "a", "b", "c"};
       }),
       "unsupported: output 3 ('c') is not implemented"},
      {"training_mode on an empty batch",
       [&] {
         OpCase c = bn_case(p);
         c.integer("training_mode", 1);
         c.run({empty({0, 5, 2, 2})});
       },
       "X [0, 5, 2, 2] is empty"},
      {"negative epsilon", build([](OpCase& c) { c.real("epsilon", -1.0f); }),
       "epsilon must be finite and non-negative"},
      {"F20 length", with("m", random({4}, 1)), "input_mean has 4 values but scale has 5"},
      {"F20 rank", with("b", random({5, 1}, 1)), "B must be 1-d and non-empty, got [5, 1]"},
      {"F20 dtype", with("v", ones({5}, DType::BFloat16)),
       "input_var has dtype bfloat16 but scale has float32"},
      {"F18 negative variance", with("v", testing::values({1, 1, -2, 1, 1}, {5})),
       "input_var is negative at channel 2 (-2)"},
      {"F19 zero variance and epsilon",
       [&] {
         OpCase c = bn_case(p);
         c.constant("v", testing::values({1, 0, 1, 1, 1}, {5})).real("epsilon", 0.0f);
         c.module();
       },
       "input_var + epsilon is 0 at channel 1"},
      {"runtime length",
       [&] {
         OpCase c("BatchNormalization", {"x", "s", "b", "m", "v"});
         c.run({random({1, 4, 2, 2}, 1), p.scale, p.bias, p.mean, p.var});
       },
       "scale must be 1-d of length 4 (X's channels), got [5]"},
  });
}

// ---- activations

TEST(OnnxActivations, BecomeTheirNnModules) {
  const Tensor x = random({2, 3, 4, 5}, 7, 8.0);
  struct Row {
    const char* op;
    const char* module;
    Tensor expected;
  };
  const Row rows[] = {
      {"Relu", "ReLU", reference::relu(x)},
      {"Sigmoid", "Sigmoid", reference::sigmoid(x)},
      {"HardSwish", "Hardswish", reference::hardswish(x)},
      {"LeakyRelu", "LeakyReLU", reference::leaky_relu(x, 0.01)},
      {"Identity", "Identity", x},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.op);
    OpCase c(row.op, {"x"});
    EXPECT_EQ(c.module()->type_name(), row.module);
    EXPECT_TRUE(c.close_in_both_layouts(x, row.expected));
  }
}

TEST(OnnxActivations, LeakyReluAlpha) {
  const Tensor x = random({1, 2, 3, 3}, 8);
  OpCase c("LeakyRelu", {"x"});
  c.real("alpha", 0.25f);
  EXPECT_TRUE(testing::all_close(c.run({x}), reference::leaky_relu(x, 0.25f), Tolerance::op_f32()));
}

// ONNX's HardSigmoid defaults (0.2, 0.5) are not PyTorch's (1/6, 1/2): only the latter is
// nn::Hardsigmoid.
TEST(OnnxActivations, HardSigmoidKeepsOnnxDefaults) {
  const Tensor x = testing::values({-4, -2.5f, -1, 0, 1, 2.5f, 4, 0.3f}, {1, 2, 2, 2});
  OpCase onnx_default("HardSigmoid", {"x"});
  EXPECT_EQ(onnx_default.module()->type_name(), "HardSigmoid");
  const Tensor y = onnx_default.run({x});
  const std::vector<float> in = x.to_vector(), out = y.to_vector();
  for (std::size_t i = 0; i < in.size(); ++i)
    EXPECT_NEAR(out[i], std::max(0.0f, std::min(1.0f, 0.2f * in[i] + 0.5f)), 1e-6) << in[i];

  OpCase torch_like("HardSigmoid", {"x"});
  torch_like.real("alpha", static_cast<float>(1.0 / 6.0)).real("beta", 0.5f);
  EXPECT_EQ(torch_like.module()->type_name(), "Hardsigmoid");
  EXPECT_TRUE(testing::all_close(torch_like.run({to_channels_last(x)}), reference::hardsigmoid(x),
                                 Tolerance::op_f32()));
}

TEST(OnnxActivations, ClipBecomesReluRelu6OrAClipOp) {
  const Tensor x = random({1, 3, 4, 4}, 9, 10.0);
  auto clip = [&](std::optional<float> lo, std::optional<float> hi) {
    OpCase c("Clip", {"x", lo ? "lo" : "", hi ? "hi" : ""});
    if (lo) c.constant("lo", full({}, *lo));
    if (hi) c.constant("hi", full({}, *hi));
    return c;
  };
  OpCase relu6 = clip(0.0f, 6.0f);
  EXPECT_EQ(relu6.module()->type_name(), "ReLU6");
  EXPECT_TRUE(testing::all_close(relu6.run({x}), reference::relu6(x), Tolerance::op_f32()));
  OpCase relu = clip(0.0f, std::nullopt);
  EXPECT_EQ(relu.module()->type_name(), "ReLU");
  OpCase other = clip(-1.0f, 2.0f);
  EXPECT_EQ(other.module()->type_name(), "Clip");
  const std::vector<float> in = x.to_vector(), out = other.run({to_channels_last(x)}).to_vector();
  for (std::size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], std::max(-1.0f, std::min(2.0f, in[i])));
  // Runtime bounds, and only a max.
  OpCase runtime("Clip", {"x", "lo", "hi"});
  EXPECT_EQ(runtime.run({testing::values({-3, 0.5f, 3}, {3}), full({}, -1.0f), full({}, 1.0f)})
                .to_vector(),
            (std::vector<float>{-1, 0.5f, 1}));
  OpCase max_only = clip(std::nullopt, 0.0f);
  EXPECT_EQ(max_only.run({testing::values({-3, 3}, {2})}).to_vector(), (std::vector<float>{-3, 0}));
  // NaN passes through.
  OpCase nan_case = clip(-1.0f, 1.0f);
  EXPECT_TRUE(std::isnan(
      nan_case.run({full({1}, std::numeric_limits<float>::quiet_NaN())}).to_vector()[0]));
}

TEST(OnnxActivations, Errors) {
  testing::expect_errors({
      {"Relu with two inputs",
       [] {
         OpCase c("Relu", {"x", "z"});
         c.module();
       },
       "expects 1 to 1 inputs, got 2"},
      {"Clip bound not scalar",
       [] {
         OpCase c("Clip", {"x", "lo"});
         c.constant("lo", zeros({2}));
         c.module();
       },
       "Clip: min must be a scalar, got [2]"},
      {"LeakyRelu alpha inf",
       [] {
         OpCase c("LeakyRelu", {"x"});
         c.real("alpha", std::numeric_limits<float>::infinity());
         c.module();
       },
       "alpha must be finite"},
      {"Clip before opset 11",
       [] {
         OpCase c("Clip", {"x"});
         c.opset(10).module();
       },
       "Clip at opset 10 is not implemented"},
  });
}

// ---- Add, Sub, Mul, Div

TEST(OnnxArith, FloatBroadcastingMatchesTheReference) {
  const Tensor a = random({2, 4, 3, 5}, 10), bias = random({1, 4, 1, 1}, 11);
  for (const char* op : {"Add", "Mul", "Sub", "Div"}) {
    SCOPED_TRACE(op);
    OpCase c(op, {"a", "b"});
    c.constant("b", bias);
    EXPECT_EQ(c.module()->type_name(), op);
    const Tensor y = c.run({a}), y_cl = c.run({to_channels_last(a)});
    // Independent check, element by element.
    for (std::int64_t n = 0; n < 2; ++n)
      for (std::int64_t ch = 0; ch < 4; ++ch)
        for (std::int64_t h = 0; h < 3; ++h)
          for (std::int64_t w = 0; w < 5; ++w) {
            const float x = a.at({n, ch, h, w}), z = bias.at({0, ch, 0, 0});
            const float expected = op[0] == 'A'   ? x + z
                                   : op[0] == 'M' ? x * z
                                   : op[0] == 'S' ? x - z
                                                  : x / z;
            ASSERT_NEAR(y.at({n, ch, h, w}), expected, 1e-4 + 1e-4 * std::fabs(expected));
            ASSERT_NEAR(y_cl.at({n, ch, h, w}), expected, 1e-4 + 1e-4 * std::fabs(expected));
          }
    // The layout follows the first full-size input.
    EXPECT_TRUE(y_cl.is_contiguous(MemoryFormat::ChannelsLast));
    EXPECT_TRUE(y.is_contiguous());
  }
}

TEST(OnnxArith, LayoutFollowsTheFirstFullSizeInput) {
  const Tensor small = random({4, 1, 1}, 12), big = to_channels_last(random({1, 4, 3, 3}, 13));
  for (const char* op : {"Add", "Sub"}) {
    OpCase c(op, {"s", "x"});
    c.constant("s", small);
    EXPECT_TRUE(c.run({big}).is_contiguous(MemoryFormat::ChannelsLast)) << op;
  }
}

TEST(OnnxArith, Int64ShapeArithmetic) {
  const Tensor a = i64({7, -7, 9, -9, 6, 0}, {2, 3}), b = i64({2, 2, -4}, {3});
  auto run = [&](const char* op) {
    OpCase c(op, {"a", "b"});
    return i64_values(c.run({a, b}));
  };
  EXPECT_EQ(run("Add"), (std::vector<std::int64_t>{9, -5, 5, -7, 8, -4}));
  EXPECT_EQ(run("Sub"), (std::vector<std::int64_t>{5, -9, 13, -11, 4, 4}));
  EXPECT_EQ(run("Mul"), (std::vector<std::int64_t>{14, -14, -36, -18, 12, 0}));
  // ONNX integer Div truncates toward zero: −7 / 2 = −3, 9 / −4 = −2.
  EXPECT_EQ(run("Div"), (std::vector<std::int64_t>{3, -3, -2, -4, 3, 0}));
  // Large values stay exact (no float round trip).
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  OpCase add("Add", {"a", "b"});
  EXPECT_EQ(i64_values(add.run({i64({big}, {1}), i64({2}, {})})),
            (std::vector<std::int64_t>{big + 2}));
}

TEST(OnnxArith, Errors) {
  testing::expect_errors({
      {"F25 shapes",
       [] {
         OpCase c("Add", {"a", "b"});
         c.run({zeros({2, 3}), zeros({4})});
       },
       "shapes [2, 3] and [4] cannot be broadcast"},
      {"F25 constant shapes",
       [] {
         OpCase c("Mul", {"a", "b"});
         c.constant("a", zeros({2, 3})).constant("b", zeros({2}));
         c.module();
       },
       "shapes [2, 3] and [2] cannot be broadcast"},
      {"dtype mismatch",
       [] {
         OpCase c("Sub", {"a", "b"});
         c.run({zeros({2}), zeros({2}, DType::Int64)});
       },
       "operands have different dtypes (float32 and int64)"},
      {"int64 division by zero",
       [] {
         OpCase c("Div", {"a", "b"});
         c.run({i64({4}, {1}), i64({0}, {1})});
       },
       "int64 division by zero"},
      {"three inputs",
       [] {
         OpCase c("Add", {"a", "b", "c"});
         c.module();
       },
       "expects 2 to 2 inputs, got 3"},
  });
}

}  // namespace
}  // namespace refold
