// LayerNormalization, GroupNormalization, InstanceNormalization and LRN
// (src/ops/normalization.cpp), Split (src/ops/concat.cpp) and the small ops added beside existing
// families (LogSoftmax, Hardmax, PRelu, Mod, Size, Dropout, CastLike, GlobalMaxPool): worked
// examples, the native LayerNorm rows against the reference, both memory formats, every opset form,
// the errors. The ONNX backend tests of these ops run in conformance.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/native/layer_norm.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_tensor_helpers.h"
#include "refold/reference.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace {

// x = [1, 2, 3, 6]: μ = 3, σ² = (4 + 1 + 0 + 9) / 4 = 3.5.
TEST(OnnxLayerNorm, WorkedExampleAndStatistics) {
  const Tensor x = values({1, 2, 3, 6}, {1, 4});
  OpCase c("LayerNormalization", {"x", "scale", "bias"}, {"y", "mean", "inv_std"});
  c.constant("scale", values({1, 1, 2, 2}, {4})).constant("bias", values({0, 0, 0, 1}, {4}));
  c.real("epsilon", 0.0f);
  const std::vector<Tensor> out = c.run_all({x});
  const float s = 1.0f / std::sqrt(3.5f);
  EXPECT_TRUE(all_close(out[0], values({-2 * s, -s, 0, 6 * s + 1}, {1, 4}), Tolerance::op_f32()));
  EXPECT_TRUE(all_close(out[1], values({3}, {1, 1}), Tolerance::op_f32()));
  EXPECT_TRUE(all_close(out[2], values({s}, {1, 1}), Tolerance::op_f32()));
}

// The native row kernel against the reference: every axis of a 4-d tensor, with and without B,
// scales of the normalized shape's trailing dims, rows of whole vectors and with tails (7, 35,
// 105, 210 values); the kernel declines non-contiguous inputs, which the op makes dense.
TEST(OnnxLayerNorm, NativeRowsMatchTheReference) {
  Generator gen(21);
  const Tensor x = uniform({2, 3, 5, 8}, 2.0, gen);
  const Tensor x7 = uniform({2, 3, 5, 7}, 2.0, gen);
  for (const Tensor& in : {x, x7}) {
    for (std::int64_t axis : {-1, -2, 1, 0}) {
      Shape normalized(in.sizes().begin() + (axis < 0 ? axis + 4 : axis), in.sizes().end());
      const Tensor scale = uniform(normalized, 1.0, gen);
      const Tensor bias = uniform(normalized, 1.0, gen);
      for (const Tensor& b : {bias, Tensor()}) {
        std::string declined;
        const Tensor fast = native::layer_norm_rows(in, scale, b, axis, 1e-5, &declined);
        ASSERT_TRUE(fast.defined()) << declined;
        EXPECT_TRUE(
            all_close(fast, reference::layer_norm(in, scale, b, axis, 1e-5).y, Tolerance::op_f32()))
            << "axis " << axis;
        // bfloat16: the float32 rows between a widening and a rounding (bfloat16_boundary.h).
        const auto bf = [](const Tensor& t) { return t.defined() ? t.to(DType::BFloat16) : t; };
        const Tensor half =
            native::layer_norm_rows(bf(in), bf(scale), bf(b), axis, 1e-5, &declined);
        ASSERT_TRUE(half.defined()) << declined;
        EXPECT_EQ(half.dtype(), DType::BFloat16);
        EXPECT_TRUE(
            all_close(half, reference::layer_norm(in, scale, b, axis, 1e-5).y, Tolerance::bf16()))
            << "axis " << axis;
      }
    }
  }
  std::string declined;
  EXPECT_FALSE(native::layer_norm_rows(to_channels_last(x), values({1}, {1}).reshape({1}), {}, -1,
                                       1e-5, &declined)
                   .defined());
  EXPECT_EQ(declined, "X's normalized dims are not contiguous rows");
  // Through the op: a channels_last input is made dense first and runs the rows too (the
  // reference ran 50× slower), with the same numbers.
  for (const std::int64_t axis : {1, -1}) {
    OpCase c("LayerNormalization", {"x", "scale"});
    Shape normalized(x.sizes().begin() + (axis < 0 ? axis + 4 : axis), x.sizes().end());
    c.integer("axis", axis).constant("scale", uniform(normalized, 1.0, gen));
    const Tensor expected = c.run({x});
    DispatchLog log;
    EXPECT_TRUE(all_close(c.run({to_channels_last(x)}), expected, Tolerance::op_f32()));
    EXPECT_EQ(log.take(), (std::vector<std::string>{"LayerNormalization: native"}));
  }
}

// x [1, 4, 2] in 2 groups of 2 channels: group 0 = channels 0, 1 = [0, 1, 2, 3] (μ 1.5,
// σ² 1.25), group 1 = channels 2, 3 = [4, 5, 6, 7] (μ 5.5, σ² 1.25).
TEST(OnnxGroupNorm, PerGroupStatisticsAndBothAffineForms) {
  const Tensor x = iota({1, 4, 2});
  const float s = 1.0f / std::sqrt(1.25f);
  const Tensor normalized =
      values({-1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s, -1.5f * s, -0.5f * s, 0.5f * s, 1.5f * s},
             {1, 4, 2});
  OpCase v21("GroupNormalization", {"x", "scale", "bias"});
  v21.opset(21).integer("num_groups", 2).real("epsilon", 0.0f);
  v21.constant("scale", values({1, 1, 1, 1}, {4})).constant("bias", values({0, 0, 0, 0}, {4}));
  EXPECT_TRUE(all_close(v21.run({x}), normalized, Tolerance::op_f32()));
  // Opset 18: one scale/bias per group, applied to each of its channels.
  OpCase v18("GroupNormalization", {"x", "scale", "bias"});
  v18.opset(18).integer("num_groups", 2).real("epsilon", 0.0f);
  v18.constant("scale", values({2, 1}, {2})).constant("bias", values({0, 1}, {2}));
  const Tensor y = v18.run({x});
  EXPECT_NEAR(y.at({0, 0, 0}), -3.0f * s, 1e-5f);
  EXPECT_NEAR(y.at({0, 3, 1}), 1.5f * s + 1.0f, 1e-5f);
  // InstanceNormalization: one channel per group; channels_last input, same result.
  Generator gen(4);
  const Tensor image = uniform({2, 3, 4, 5}, 1.0, gen);
  OpCase instance("InstanceNormalization", {"x", "scale", "bias"});
  instance.constant("scale", values({1, 2, 3}, {3})).constant("bias", values({0, 1, 0}, {3}));
  const Tensor expected =
      reference::group_norm(image, values({1, 2, 3}, {3}), values({0, 1, 0}, {3}), 3, 1e-5);
  EXPECT_TRUE(instance.close_in_both_layouts(image, expected));
}

// size 3 around channel 1 of [1, 2, 3]: Σ x² = 14; y = 2 / (1 + 1e-4/3 · 14)^0.75.
TEST(OnnxLrn, WindowAcrossChannels) {
  OpCase c("LRN", {"x"});
  c.integer("size", 3);
  const Tensor y = c.run({values({1, 2, 3}, {1, 3, 1, 1})});
  EXPECT_NEAR(y.at({0, 1, 0, 0}), 2.0 / std::pow(1.0 + 1e-4 / 3 * 14, 0.75), 1e-6);
  EXPECT_NEAR(y.at({0, 0, 0, 0}), 1.0 / std::pow(1.0 + 1e-4 / 3 * 5, 0.75), 1e-6);
}

TEST(OnnxSplit, EveryFormAndLayout) {
  const Tensor x = iota({1, 6, 2, 2});
  // Equal pieces (no split); the outputs keep a channels_last input's format.
  OpCase even("Split", {"x"}, {"a", "b", "c"});
  even.integer("axis", 1);
  const std::vector<Tensor> pieces = even.run_all({to_channels_last(x)});
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[1].sizes(), (Shape{1, 2, 2, 2}));
  EXPECT_EQ(pieces[1].suggest_memory_format(), MemoryFormat::ChannelsLast);
  EXPECT_FLOAT_EQ(pieces[1].at({0, 0, 0, 0}), 8.0f);  // channel 2 starts at 2·4
  // The attribute (opset < 13), the input (13+), num_outputs (18+, the last piece smaller).
  OpCase attribute("Split", {"x"}, {"a", "b"});
  attribute.opset(11).integer("axis", 1).ints("split", {4, 2});
  EXPECT_EQ(attribute.run_all({x})[1].sizes(), (Shape{1, 2, 2, 2}));
  OpCase input("Split", {"x", "split"}, {"a", "b"});
  input.opset(13).integer("axis", -1).constant("split", i64({1, 1}));
  EXPECT_FLOAT_EQ(input.run_all({x})[1].at({0, 0, 0, 0}), 1.0f);
  OpCase uneven("Split", {"x"}, {"a", "b", "c", "d"});
  uneven.opset(18).integer("axis", 1).integer("num_outputs", 4);
  const std::vector<Tensor> four = uneven.run_all({x});
  EXPECT_EQ(four[0].size(1), 2);
  EXPECT_EQ(four[3].size(1), 0);  // ⌈6/4⌉ = 2: 2, 2, 2, 0
}

// yolov8n (dynamo export): Split's second piece, read by a Conv and an Add, gave a wrong Add
// when the piece kept its view's strides ([1, 16, H, W] with the batch stride of 32 channels).
// The pieces now have standard strides; the Add over them matches the reference.
TEST(OnnxSplit, PiecesHaveStandardStridesAndAddCorrectly) {
  Generator gen(13);
  const Tensor x = uniform({1, 32, 20, 20}, 1.0, gen);
  OpCase split("Split", {"x"}, {"a", "b"});
  split.opset(18).integer("axis", 1).integer("num_outputs", 2);
  const std::vector<Tensor> pieces = split.run_all({x});
  EXPECT_EQ(pieces[1].strides(), (Shape{16 * 400, 400, 20, 1}));
  const Tensor other = uniform({1, 16, 20, 20}, 1.0, gen);
  OpCase add("Add", {"a", "b"});
  EXPECT_TRUE(all_close(add.run({pieces[1], other}), reference::add(pieces[1], other),
                        Tolerance::op_f32()));
  // The same Add on the strided view itself (the layout the pieces used to have).
  const Tensor view = x.as_strided({1, 16, 20, 20}, x.strides(), 16 * 400);
  EXPECT_TRUE(all_close(add.run({view, other}), reference::add(view.contiguous(), other),
                        Tolerance::op_f32()));
}

TEST(OnnxSmallOps, SoftmaxFamilyPReluModSizeDropoutCastLikeGlobalMaxPool) {
  const Tensor x = values({1, 2, 3, 3}, {4});
  OpCase log_softmax("LogSoftmax", {"x"});
  // log softmax = x − 3 − ln(e⁻² + e⁻¹ + 2).
  const double lse = std::log(std::exp(-2.0) + std::exp(-1.0) + 2.0);
  EXPECT_NEAR(log_softmax.run({x}).at({0}), -2.0 - lse, 1e-6);
  OpCase hardmax("Hardmax", {"x"});
  EXPECT_TRUE(all_close(hardmax.run({x}), values({0, 0, 1, 0}, {4}), Tolerance::exact()));

  OpCase prelu("PRelu", {"x", "slope"});
  prelu.constant("slope", values({0.5f, 2}, {2, 1, 1}));
  EXPECT_TRUE(all_close(prelu.run({values({-2, 4, -2, 4}, {1, 2, 1, 2})}),
                        values({-1, 4, -4, 4}, {1, 2, 1, 2}), Tolerance::exact()));

  OpCase mod("Mod", {"a", "b"});
  EXPECT_EQ(i64_values(mod.run({i64({-7, 7, 7}), i64({3, -3, 3})})),
            (std::vector<std::int64_t>{2, -2, 1}));  // the divisor's sign, as Python
  OpCase fmod("Mod", {"a", "b"});
  fmod.integer("fmod", 1);
  EXPECT_TRUE(all_close(fmod.run({values({-7.5f}, {1}), values({2}, {1})}), values({-1.5f}, {1}),
                        Tolerance::exact()));

  OpCase size("Size", {"x"});
  EXPECT_EQ(i64_values(size.run({zeros({2, 3, 4})})), (std::vector<std::int64_t>{24}));

  OpCase dropout("Dropout", {"x", "ratio"}, {"y", "mask"});
  dropout.opset(13).constant("ratio", values({0.5f}, {}));
  const std::vector<Tensor> out = dropout.run_all({x});
  EXPECT_TRUE(all_close(out[0], x, Tolerance::exact()));
  EXPECT_EQ(i64_values(out[1]), (std::vector<std::int64_t>{1, 1, 1, 1}));

  OpCase cast_like("CastLike", {"x", "like"});
  EXPECT_EQ(i64_values(cast_like.run({values({1.7f, -2.2f}, {2}), i64({0})})),
            (std::vector<std::int64_t>{1, -2}));

  OpCase global_max("GlobalMaxPool", {"x"});
  Generator gen(9);
  const Tensor image = uniform({2, 3, 4, 5}, 1.0, gen);
  EXPECT_TRUE(global_max.close_in_both_layouts(
      image, reference::reduce(image, {2, 3}, true, reference::ReduceOp::Max)));
}

TEST(OnnxNormalizationAndSplit, Errors) {
  expect_errors({
      {"layer norm scale shape",
       [&] {
         OpCase("LayerNormalization", {"x", "s"}).run({zeros({2, 3}), zeros({4})});
       },
       "LayerNormalization: shapes [2, 3] and [4] cannot be broadcast"},
      {"layer norm scale over unnormalized dims",
       [&] {
         OpCase("LayerNormalization", {"x", "s"}).run({zeros({2, 3}), zeros({2, 3})});
       },
       "LayerNormalization: Scale of shape [2, 3] does not broadcast to the normalized shape of "
       "X [2, 3] (axis -1)"},
      {"layer norm epsilon",
       [&] {
         OpCase("LayerNormalization", {"x", "s"}).real("epsilon", -1.0f).module();
       },
       "epsilon must be finite and non-negative (got -1)"},
      {"group norm groups",
       [&] {
         OpCase("GroupNormalization", {"x", "s", "b"})
             .opset(21)
             .integer("num_groups", 3)
             .run({zeros({1, 4, 2}), zeros({4}), zeros({4})});
       },
       "GroupNormalization: 4 channels do not split into 3 groups"},
      {"group norm num_groups",
       [&] {
         OpCase("GroupNormalization", {"x", "s", "b"}).opset(21).module();
       },
       "the num_groups attribute is required"},
      {"lrn size", [&] { OpCase("LRN", {"x"}).integer("size", 0).module(); },
       "size must be positive (got 0)"},
      {"split sum",
       [&] {
         OpCase("Split", {"x"}, {"a", "b"}).opset(11).ints("split", {1, 1}).run({zeros({3})});
       },
       "Split: split [1, 1] sums to 2, but axis 0 has size 3"},
      {"split uneven",
       [&] {
         OpCase("Split", {"x"}, {"a", "b"}).opset(11).run({zeros({3})});
       },
       "Split: an axis of size 3 does not split evenly into 2 outputs"},
      {"split count",
       [&] {
         OpCase("Split", {"x"}, {"a", "b"}).opset(11).ints("split", {3}).module();
       },
       "split has 1 lengths [3] for 2 outputs"},
      {"split 18 needs a form",
       [&] {
         OpCase("Split", {"x"}, {"a", "b"}).opset(18).module();
       },
       "from opset 18 on, Split needs the split input or num_outputs"},
      {"dropout training",
       [&] {
         OpCase("Dropout", {"x", "r", "t"}).opset(13).constant("t", i64({1}, {})).module();
       },
       "unsupported: training_mode is true (refold runs inference only)"},
  });
}

}  // namespace
}  // namespace refold::testing
