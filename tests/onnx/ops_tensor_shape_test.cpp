// Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat and DepthToSpace built from ONNX nodes
// (ops::build_module) and run, NCHW and channels_last, with every error message.
#include <gtest/gtest.h>

#include <limits>

#include "onnx/ops_tensor_helpers.h"
#include "ops/concat.h"
#include "ops/reshape.h"
#include "ops/transpose.h"
#include "refold/nn/basic.h"
#include "testing/builders.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace {

std::vector<float> iota_values(std::int64_t n, float start = 0) {
  std::vector<float> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(start + static_cast<float>(i));
  return v;
}

// ---- Reshape ----

TEST(OnnxReshape, ZeroCopiesAndMinusOneInfers) {
  const Tensor x = iota({2, 3, 4});
  Tensor y = OpCase("Reshape", {"x", "s"}).constant("s", i64({0, -1})).run({x});
  EXPECT_EQ(y.sizes(), (Shape{2, 12}));
  EXPECT_EQ(y.to_vector(), iota_values(24));
  y = OpCase("Reshape", {"x", "s"}).constant("s", i64({4, 0, -1})).run({x});
  EXPECT_EQ(y.sizes(), (Shape{4, 3, 2}));
  // A runtime shape (not a constant).
  y = OpCase("Reshape", {"x", "s"}).run({x, i64({-1})});
  EXPECT_EQ(y.sizes(), (Shape{24}));
}

TEST(OnnxReshape, AllowzeroKeepsZeroAsASize) {
  const Tensor x = zeros({0, 3, 4});
  Tensor y =
      OpCase("Reshape", {"x", "s"}).constant("s", i64({0, 4})).integer("allowzero", 1).run({x});
  EXPECT_EQ(y.sizes(), (Shape{0, 4}));
  // Without allowzero a 0 copies the input's size there: [4, 0] on [2, 3, 2] is [4, 3].
  y = OpCase("Reshape", {"x", "s"}).constant("s", i64({4, 0})).run({iota({2, 3, 2})});
  EXPECT_EQ(y.sizes(), (Shape{4, 3}));
}

TEST(OnnxReshape, ChannelsLastInputKeepsNchwElementOrder) {
  const Tensor x = iota({1, 2, 2, 3});
  const Tensor y =
      OpCase("Reshape", {"x", "s"}).constant("s", i64({1, -1})).run({to_channels_last(x)});
  EXPECT_EQ(y.to_vector(), iota_values(12));
  EXPECT_FALSE(ops::Reshape().accepts_channels_last());
}

TEST(OnnxReshape, Errors) {
  const Tensor x = iota({2, 3, 4});
  expect_errors({
      {"two -1",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", i64({-1, -1})).module();
       },
       "shape [-1, -1] has more than one -1"},
      {"-2",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", i64({-2, 12})).module();
       },
       "invalid size -2 in shape [-2, 12]"},
      {"allowzero with 0 and -1",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", i64({0, -1})).integer("allowzero", 1).module();
       },
       "shape [0, -1] has both 0 and -1 with allowzero=1"},
      {"allowzero 2",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", i64({1})).integer("allowzero", 2).module();
       },
       "allowzero must be 0 or 1, got 2"},
      {"one input", [&] { OpCase("Reshape", {"x"}).module(); }, "expects 2 to 2 inputs, got 1"},
      {"float shape",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", values({1}, {1})).module();
       },
       "shape has dtype float32; expected int64"},
      {"cannot infer",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", i64({5, -1})).run({x});
       },
       "Reshape: cannot infer the -1 in [5, -1] for an input [2, 3, 4] of 24 elements"},
      {"count mismatch",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", i64({5, 2})).run({x});
       },
       "Reshape: shape [5, 2] gives 10 elements, the input [2, 3, 4] has 24"},
      {"0 past the rank",
       [&] {
         OpCase("Reshape", {"x", "s"}).constant("s", i64({24, 1, 1, 0})).run({x});
       },
       "Reshape: shape [24, 1, 1, 0] copies dimension 3 (0) but the input [2, 3, 4] has rank 3"},
      {"2-d shape",
       [&] {
         OpCase("Reshape", {"x", "s"}).run({x, i64({2, 12}, {1, 2})});
       },
       "Reshape: shape must be 1-d, got shape [1, 2]"},
  });
}

// ---- Flatten ----

TEST(OnnxFlatten, EveryAxisIsTheGeneralOpDecidingFromTheRankAtRunTime) {
  const Tensor x = iota({2, 3, 2, 2});
  OpCase c("Flatten", {"x"});
  EXPECT_NE(std::dynamic_pointer_cast<ops::Flatten>(c.module()), nullptr);
  Tensor y = c.run({to_channels_last(x)});
  EXPECT_EQ(y.sizes(), (Shape{2, 12}));
  EXPECT_EQ(y.to_vector(), iota_values(24));
  const std::vector<std::pair<std::int64_t, Shape>> cases = {
      {0, {1, 24}}, {2, {6, 4}}, {-1, {12, 2}}, {4, {24, 1}}, {-4, {1, 24}}};
  for (const auto& [axis, sizes] : cases) {
    OpCase f("Flatten", {"x"});
    f.integer("axis", axis);
    EXPECT_NE(std::dynamic_pointer_cast<ops::Flatten>(f.module()), nullptr);
    y = f.run({to_channels_last(x)});
    EXPECT_EQ(y.sizes(), sizes) << "axis " << axis;
    EXPECT_EQ(y.to_vector(), iota_values(24)) << "axis " << axis;
  }
}

// test_operator_view: the default axis 1 of a 1-d input is valid ONNX (axis = rank): [n, 1].
// torch's flatten(1), which the importer used to build, refused it.
TEST(OnnxFlatten, Axis1OfA1dInputIsNBy1) {
  OpCase c("Flatten", {"x"});
  Tensor y = c.run({iota({5})});
  EXPECT_EQ(y.sizes(), (Shape{5, 1}));
  EXPECT_EQ(y.to_vector(), iota_values(5));
  OpCase zero("Flatten", {"x"});
  zero.integer("axis", 0);
  EXPECT_EQ(zero.run({iota({5})}).sizes(), (Shape{1, 5}));
  OpCase scalar("Flatten", {"x"});
  scalar.integer("axis", 0);
  EXPECT_EQ(scalar.run({iota({1}).reshape({})}).sizes(), (Shape{1, 1}));
  OpCase bad("Flatten", {"x"});
  bad.integer("axis", 2);
  EXPECT_TRUE(
      testing::throws_error([&] { bad.run({iota({5})}); }, "Flatten: axis 2 out of range [-1, 1]"));
}

TEST(OnnxFlatten, ConstantInt64InputIsExact) {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;  // not a float
  OpCase c("Flatten", {"x"});
  c.constant("x", i64({big, 2, 3, 4}, {2, 2}));
  const Tensor y = c.run({});
  EXPECT_EQ(y.sizes(), (Shape{2, 2}));
  EXPECT_EQ(i64_values(y), (std::vector<std::int64_t>{big, 2, 3, 4}));
}

TEST(OnnxFlatten, Errors) {
  expect_errors({
      {"constant axis out of range",
       [&] {
         OpCase("Flatten", {"x"}).constant("x", zeros({2, 3})).integer("axis", 3).module();
       },
       "axis 3 out of range [-2, 2]"},
      {"runtime axis out of range",
       [&] {
         OpCase("Flatten", {"x"}).integer("axis", -5).run({zeros({2, 3, 4, 5})});
       },
       "Flatten: axis -5 out of range [-4, 4]"},
  });
}

// ---- Squeeze / Unsqueeze ----

TEST(OnnxSqueeze, AxesInputAttributeAndAll) {
  const Tensor x = iota({1, 2, 1, 3});
  Tensor y = OpCase("Squeeze", {"x", "a"}).constant("a", i64({-2})).run({x});
  EXPECT_EQ(y.sizes(), (Shape{1, 2, 3}));
  y = OpCase("Squeeze", {"x"}).run({x});
  EXPECT_EQ(y.sizes(), (Shape{2, 3}));
  EXPECT_EQ(y.to_vector(), iota_values(6));
  y = OpCase("Squeeze", {"x"}).opset(11).ints("axes", {0}).run({x});
  EXPECT_EQ(y.sizes(), (Shape{2, 1, 3}));
  y = OpCase("Squeeze", {"x"}).opset(11).run({x});
  EXPECT_EQ(y.sizes(), (Shape{2, 3}));
}

TEST(OnnxUnsqueeze, AxesOfTheOutput) {
  const Tensor x = iota({2, 3});
  Tensor y = OpCase("Unsqueeze", {"x", "a"}).constant("a", i64({0, 3})).run({x});
  EXPECT_EQ(y.sizes(), (Shape{1, 2, 3, 1}));
  EXPECT_EQ(y.to_vector(), iota_values(6));
  y = OpCase("Unsqueeze", {"x", "a"}).constant("a", i64({-1})).run({x});
  EXPECT_EQ(y.sizes(), (Shape{2, 3, 1}));
  y = OpCase("Unsqueeze", {"x"}).opset(11).ints("axes", {1}).run({x});
  EXPECT_EQ(y.sizes(), (Shape{2, 1, 3}));
  // A 0-d int64 (a shape element) becomes 1-d, exactly.
  y = OpCase("Unsqueeze", {"x", "a"}).constant("a", i64({0})).run({i64({-7}, {})});
  EXPECT_EQ(y.sizes(), (Shape{1}));
  EXPECT_EQ(i64_values(y), (std::vector<std::int64_t>{-7}));
}

TEST(OnnxSqueezeUnsqueeze, Errors) {
  const Tensor x = iota({1, 2, 1, 3});
  expect_errors({
      {"squeeze size 2",
       [&] {
         OpCase("Squeeze", {"x", "a"}).constant("a", i64({1})).run({x});
       },
       "Squeeze: dimension 1 of [1, 2, 1, 3] has size 2, not 1"},
      {"squeeze axis range",
       [&] {
         OpCase("Squeeze", {"x", "a"}).constant("a", i64({4})).run({x});
       },
       "Squeeze: axis 4 out of range for rank 4 (axes [4])"},
      {"squeeze repeated",
       [&] {
         OpCase("Squeeze", {"x", "a"}).constant("a", i64({0, -4})).run({x});
       },
       "Squeeze: axis -4 repeated in axes [0, -4]"},
      {"axes attribute at 13",
       [&] { OpCase("Squeeze", {"x"}).opset(13).ints("axes", {0}).module(); },
       "axes is an input from opset 13, not an attribute (opset 13)"},
      {"unsqueeze without axes at 11", [&] { OpCase("Unsqueeze", {"x"}).opset(11).module(); },
       "the axes attribute is required (opset 11)"},
      {"unsqueeze without axes at 13", [&] { OpCase("Unsqueeze", {"x"}).module(); },
       "expects 2 to 2 inputs, got 1"},
      {"unsqueeze repeated constant",
       [&] {
         OpCase("Unsqueeze", {"x", "a"}).constant("a", i64({1, 1})).module();
       },
       "axes [1, 1] repeat an axis"},
      {"unsqueeze range",
       [&] {
         OpCase("Unsqueeze", {"x", "a"}).constant("a", i64({5})).run({x});
       },
       "Unsqueeze: axis 5 out of range for rank 5 (axes [5])"},
      {"unsqueeze empty", [&] { OpCase("Unsqueeze", {"x"}).opset(11).ints("axes", {}).module(); },
       "axes is empty"},
  });
}

// ---- Transpose ----

TEST(OnnxTranspose, PermAndDefaultReverse) {
  const Tensor x = iota({2, 3, 4});
  Tensor y = OpCase("Transpose", {"x"}).ints("perm", {2, 0, 1}).run({x});
  ASSERT_EQ(y.sizes(), (Shape{4, 2, 3}));
  // out[k, i, j] = in[i, j, k] = 12·i + 4·j + k
  for (std::int64_t k = 0; k < 4; ++k)
    for (std::int64_t i = 0; i < 2; ++i)
      for (std::int64_t j = 0; j < 3; ++j)
        EXPECT_EQ(y.at({k, i, j}), static_cast<float>(12 * i + 4 * j + k));
  y = OpCase("Transpose", {"x"}).run({x});
  ASSERT_EQ(y.sizes(), (Shape{4, 3, 2}));
  EXPECT_EQ(y.at({3, 2, 1}), 23.0f);
  EXPECT_EQ(y.at({1, 0, 1}), 13.0f);
}

TEST(OnnxTranspose, ChannelsLastInputToNhwcIsItsMemory) {
  const Tensor x = to_channels_last(iota({1, 3, 2, 2}));
  OpCase c("Transpose", {"x"});
  c.ints("perm", {0, 2, 3, 1});
  EXPECT_TRUE(c.module()->accepts_channels_last());
  const Tensor y = c.run({x});
  ASSERT_EQ(y.sizes(), (Shape{1, 2, 2, 3}));
  // The NHWC memory of x, read in order, is y's logical order.
  const float* mem = x.data<float>();
  EXPECT_EQ(y.to_vector(), std::vector<float>(mem, mem + 12));
}

TEST(OnnxTranspose, Int64IsExact) {
  const std::int64_t big = std::numeric_limits<std::int64_t>::max();
  const Tensor y = OpCase("Transpose", {"x"}).run({i64({1, big, 3, -big}, {2, 2})});
  EXPECT_EQ(i64_values(y), (std::vector<std::int64_t>{1, 3, big, -big}));
}

TEST(OnnxTranspose, Errors) {
  expect_errors({
      {"repeated",
       [&] {
         OpCase("Transpose", {"x"}).ints("perm", {0, 0, 1}).module();
       },
       "perm [0, 0, 1] is not a permutation of 0..2"},
      {"out of range",
       [&] {
         OpCase("Transpose", {"x"}).ints("perm", {0, 3}).module();
       },
       "perm [0, 3] is not a permutation of 0..1"},
      {"wrong length",
       [&] {
         OpCase("Transpose", {"x"}).ints("perm", {1, 0}).run({iota({2, 3, 4})});
       },
       "perm [1, 0] has 2 entries for a 3-d input"},
  });
}

// ---- Concat ----

TEST(OnnxConcat, FloatNchwAndChannelsLast) {
  const Tensor a = iota({1, 2, 2, 2});
  const Tensor b = iota({1, 3, 2, 2}, 100);
  OpCase c("Concat", {"a", "b"});
  c.integer("axis", 1);
  const Tensor y = c.run({a, b});
  ASSERT_EQ(y.sizes(), (Shape{1, 5, 2, 2}));
  std::vector<float> expected = iota_values(8);
  for (float v : iota_values(12, 100)) expected.push_back(v);
  EXPECT_EQ(y.to_vector(), expected);
  const Tensor ycl = c.run({to_channels_last(a), to_channels_last(b)});
  EXPECT_TRUE(is_channels_last(ycl));
  EXPECT_EQ(ycl.to_vector(), expected);
  // Negative axis: −3 is the channel axis of a 4-d tensor.
  OpCase n("Concat", {"a", "b"});
  n.integer("axis", -3);
  EXPECT_EQ(n.run({a, to_channels_last(b)}).to_vector(), expected);
}

TEST(OnnxConcat, Int64OneDimensional) {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  OpCase c("Concat", {"a", "b", "c"});
  c.integer("axis", 0).constant("c", i64({big}));
  const Tensor y = c.run({i64({1, -1}), i64({})});
  EXPECT_EQ(i64_values(y), (std::vector<std::int64_t>{1, -1, big}));
}

TEST(OnnxConcat, Errors) {
  expect_errors({
      {"no axis",
       [&] {
         OpCase("Concat", {"a", "b"}).module();
       },
       "the axis attribute is required"},
      {"float shape mismatch",
       [&] {
         OpCase("Concat", {"a", "b"}).integer("axis", 1).run({zeros({1, 2}), zeros({2, 2})});
       },
       "input 1 has shape [2, 2] but input 0 has [1, 2]"},
      {"int64 shape mismatch",
       [&] {
         OpCase("Concat", {"a", "b"})
             .integer("axis", 0)
             .run({i64({1, 2}, {1, 2}), i64({1}, {1, 1})});
       },
       "concat: input 1 has shape [1, 1] but input 0 has [1, 2]; they must match in every "
       "dimension except axis 0"},
      {"axis out of range",
       [&] {
         OpCase("Concat", {"a", "b"}).integer("axis", 2).run({i64({1}), i64({2})});
       },
       "concat: axis 2 out of range for a 1-d tensor"},
      {"mixed dtypes",
       [&] {
         OpCase("Concat", {"a", "b"}).integer("axis", 0).run({i64({1}), zeros({1})});
       },
       "concat: input 1 has dtype float32 but input 0 has int64"},
  });
}

// ---- DepthToSpace ----

TEST(OnnxDepthToSpace, DcrAndCrd) {
  const Tensor x = iota({1, 8, 1, 1});
  OpCase dcr("DepthToSpace", {"x"});
  dcr.integer("blocksize", 2);
  // DCR: out[c, i, j] = in[(i·2 + j)·2 + c]
  EXPECT_EQ(dcr.run({x}).to_vector(), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  OpCase crd("DepthToSpace", {"x"});
  crd.integer("blocksize", 2).text("mode", "CRD");
  EXPECT_NE(std::dynamic_pointer_cast<nn::PixelShuffle>(crd.module()), nullptr);
  // CRD: out[c, i, j] = in[c·4 + i·2 + j]
  EXPECT_EQ(crd.run({x}).to_vector(), iota_values(8));
}

TEST(OnnxDepthToSpace, SpecExampleAndChannelsLast) {
  // The ONNX spec's DCR example: x = arange(48).reshape(1, 8, 2, 3), blocksize 2.
  const Tensor x = iota({1, 8, 2, 3});
  OpCase c("DepthToSpace", {"x"});
  c.integer("blocksize", 2).text("mode", "DCR");
  const Tensor y = c.run({x});
  ASSERT_EQ(y.sizes(), (Shape{1, 2, 4, 6}));
  const std::vector<float> expected = {
      0, 12, 1, 13, 2, 14, 24, 36, 25, 37, 26, 38, 3, 15, 4,  16, 5,  17, 27, 39, 28, 40, 29, 41,
      6, 18, 7, 19, 8, 20, 30, 42, 31, 43, 32, 44, 9, 21, 10, 22, 11, 23, 33, 45, 34, 46, 35, 47};
  EXPECT_EQ(y.to_vector(), expected);
  const Tensor ycl = c.run({to_channels_last(x)});
  EXPECT_TRUE(is_channels_last(ycl));
  EXPECT_EQ(ycl.to_vector(), expected);
}

TEST(OnnxDepthToSpace, Errors) {
  expect_errors({
      {"no blocksize", [&] { OpCase("DepthToSpace", {"x"}).module(); },
       "the blocksize attribute is required"},
      {"blocksize 0", [&] { OpCase("DepthToSpace", {"x"}).integer("blocksize", 0).module(); },
       "blocksize must be positive, got 0"},
      {"mode",
       [&] { OpCase("DepthToSpace", {"x"}).integer("blocksize", 2).text("mode", "RDC").module(); },
       "unknown mode 'RDC' (expected DCR or CRD)"},
      {"channels",
       [&] {
         OpCase("DepthToSpace", {"x"}).integer("blocksize", 2).run({zeros({1, 3, 2, 2})});
       },
       "depth_to_space: channels (3) must be divisible by blocksize² (4)"},
      {"rank",
       [&] {
         OpCase("DepthToSpace", {"x"}).integer("blocksize", 2).run({zeros({4, 2, 2})});
       },
       "depth_to_space: input must be 4-d [N, C, H, W], got [4, 2, 2]"},
  });
}

}  // namespace
}  // namespace refold::testing
