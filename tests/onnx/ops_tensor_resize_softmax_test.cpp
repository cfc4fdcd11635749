// Softmax (both definitions) and Resize (nearest modes, linear, coordinate modes, scales or
// sizes) built from ONNX nodes and run, NCHW and channels_last, with every error message.
// Goldens are the ONNX backend tests' own (test_resize_*), or worked out in the comments.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/verbose.h"
#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace {

// ---- Softmax ----

TEST(OnnxSoftmax, LastAxisByDefault) {
  const Tensor x = values({1, 2, 3, 0, 0, 0}, {2, 3});
  const Tensor y = OpCase("Softmax", {"x"}).run({x});
  // exp([1, 2, 3]) / Σ = [0.09003057, 0.24472847, 0.66524096]
  const Tensor expected =
      values({0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f}, {2, 3});
  EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()));
}

TEST(OnnxSoftmax, ChannelAxisOnChannelsLastKeepsTheFormat) {
  Generator gen(3);
  const Tensor x = uniform({2, 5, 3, 4}, 4.0, gen);
  OpCase c("Softmax", {"x"});
  c.integer("axis", 1);
  EXPECT_TRUE(c.module()->accepts_channels_last());
  const Tensor y = c.run({x});
  const Tensor ycl = c.run({to_channels_last(x)});
  EXPECT_TRUE(is_channels_last(ycl));
  // The native kernel sums along contiguous channels in NHWC and across rows in NCHW: the same
  // values to rounding.
  EXPECT_TRUE(all_close(ycl, y, Tolerance::op_f32()));
  // Each (n, h, w) column sums to 1 over the channels.
  for (std::int64_t h = 0; h < 3; ++h) {
    double sum = 0;
    for (std::int64_t ch = 0; ch < 5; ++ch) sum += y.at({1, ch, h, 2});
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

TEST(OnnxSoftmax, BeforeOpset13CoercesTo2d) {
  // opset 11, axis 1 on [2, 2, 2]: rows of 4 = softmax over dims 1 and 2 together.
  const Tensor x = iota({2, 2, 2});
  OpCase c("Softmax", {"x"});
  c.opset(11);
  EXPECT_FALSE(c.module()->accepts_channels_last());
  const Tensor y = c.run({x});
  // softmax([0, 1, 2, 3]) = [0.0320586, 0.08714432, 0.23688282, 0.64391426], same for row 2.
  const std::vector<float> row = {0.0320586f, 0.08714432f, 0.23688282f, 0.64391426f};
  std::vector<float> both = row;
  both.insert(both.end(), row.begin(), row.end());
  EXPECT_TRUE(all_close(y, values(both, {2, 2, 2}), Tolerance::op_f32()));
  // axis = rank: every row holds one element, so every output is 1.
  OpCase last("Softmax", {"x"});
  last.opset(11).integer("axis", 3);
  EXPECT_TRUE(all_close(last.run({x}), ones({2, 2, 2}), Tolerance::exact()));
  // opset 13 on the same input: only the last axis.
  OpCase now("Softmax", {"x"});
  const Tensor y13 = now.run({x});
  EXPECT_NEAR(y13.at({0, 0, 1}), 0.7310586f, 1e-6);
}

TEST(OnnxSoftmax, Errors) {
  expect_errors({
      {"runtime axis",
       [&] {
         OpCase("Softmax", {"x"}).integer("axis", 2).run({zeros({2, 3})});
       },
       "softmax: axis 2 out of range for a 2-d tensor"},
      {"constant axis",
       [&] {
         OpCase("Softmax", {"x"}).constant("x", zeros({2, 3})).integer("axis", -3).module();
       },
       "axis -3 out of range for rank 2"},
      {"coerced axis",
       [&] {
         OpCase("Softmax", {"x"}).opset(11).integer("axis", 3).run({zeros({2, 3})});
       },
       "softmax: axis 3 out of range [-2, 2]"},
      {"int64",
       [&] {
         OpCase("Softmax", {"x"}).run({i64({1, 2})});
       },
       "softmax: input has dtype int64; expected float32 or bfloat16"},
  });
}

// ---- Resize ----

Tensor scales_tensor(std::vector<float> s) {
  return values(s, {static_cast<std::int64_t>(s.size())});
}

// Resize with constant scales (input 2) or sizes (input 3).
OpCase resize_scales(std::vector<float> scales) {
  OpCase c("Resize", {"x", "", "scales"});
  c.constant("scales", scales_tensor(std::move(scales)));
  return c;
}
OpCase resize_sizes(std::vector<std::int64_t> sizes) {
  OpCase c("Resize", {"x", "", "", "sizes"});
  c.constant("sizes", i64(std::move(sizes)));
  return c;
}

TEST(OnnxResize, NearestUpsampleHalfPixel) {
  // half_pixel, scale 2: x_in = (x + 0.5)/2 − 0.5 = −0.25, 0.25, 0.75, 1.25 → 0, 0, 1, 1.
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor y = resize_scales({1, 1, 2, 2}).run({x});
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 4, 4}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(OnnxResize, NearestModesOnHalves) {
  // asymmetric, 4 → 8: x_in = x / 2 = 0, .5, 1, 1.5, 2, 2.5, 3, 3.5 (clamped to 3 at the end).
  const Tensor x = values({10, 11, 12, 13}, {1, 1, 1, 4});
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"round_prefer_floor", {10, 10, 11, 11, 12, 12, 13, 13}},
      {"round_prefer_ceil", {10, 11, 11, 12, 12, 13, 13, 13}},
      {"floor", {10, 10, 11, 11, 12, 12, 13, 13}},
      {"ceil", {10, 11, 11, 12, 12, 13, 13, 13}},
  };
  for (const auto& [mode, expected] : cases) {
    OpCase c = resize_sizes({1, 1, 1, 8});
    c.text("coordinate_transformation_mode", "asymmetric").text("nearest_mode", mode);
    EXPECT_EQ(c.run({x}).to_vector(), expected) << mode;
  }
  // 2 → 3, asymmetric: x_in = 0, 0.667, 1.333: floor → 0, 0, 1; ceil → 0, 1, 2 → 1 (clamped).
  const Tensor x2 = values({10, 11}, {1, 1, 1, 2});
  OpCase f = resize_sizes({1, 1, 1, 3});
  f.text("coordinate_transformation_mode", "asymmetric").text("nearest_mode", "floor");
  EXPECT_EQ(f.run({x2}).to_vector(), (std::vector<float>{10, 10, 11}));
  OpCase ce = resize_sizes({1, 1, 1, 3});
  ce.text("coordinate_transformation_mode", "asymmetric").text("nearest_mode", "ceil");
  EXPECT_EQ(ce.run({x2}).to_vector(), (std::vector<float>{10, 11, 11}));
  // tf_half_pixel_for_nn: x_in = (x + 0.5) / 1.5 = 0.333, 1, 1.667 → round 0, 1, 2 → 1.
  OpCase tf = resize_sizes({1, 1, 1, 3});
  tf.text("coordinate_transformation_mode", "tf_half_pixel_for_nn");
  EXPECT_EQ(tf.run({x2}).to_vector(), (std::vector<float>{10, 11, 11}));
}

TEST(OnnxResize, LinearGoldensFromTheOnnxTests) {
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  // test_resize_upsample_scales_linear (half_pixel)
  OpCase hp = resize_scales({1, 1, 2, 2});
  hp.text("mode", "linear");
  EXPECT_TRUE(all_close(
      hp.run({x}),
      values({1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4},
             {1, 1, 4, 4}),
      Tolerance::op_f32()));
  // test_resize_upsample_scales_linear_align_corners
  OpCase ac = resize_scales({1, 1, 2, 2});
  ac.text("mode", "linear").text("coordinate_transformation_mode", "align_corners");
  const float t = 1.0f / 3;
  EXPECT_TRUE(all_close(ac.run({x}),
                        values({1, 1 + t, 1 + 2 * t, 2, 1 + 2 * t, 2, 2 + t, 2 + 2 * t, 2 + t,
                                2 + 2 * t, 3, 3 + t, 3, 3 + t, 3 + 2 * t, 4},
                               {1, 1, 4, 4}),
                        Tolerance::op_f32()));
  // test_resize_downsample_scales_linear: [1, 1, 2, 4] by 0.6 → [1, 1, 1, 2]
  OpCase down = resize_scales({1, 1, 0.6f, 0.6f});
  down.text("mode", "linear");
  EXPECT_TRUE(all_close(down.run({values({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4})}),
                        values({2.6666665f, 4.3333331f}, {1, 1, 1, 2}), Tolerance::op_f32()));
}

// half_pixel_symmetric (opset 19): half_pixel shifted by (in / 2)·(1 − out / length), so that
// the output stays centred where out = floor(length) < length. The goldens are ONNX's
// test_resize_{down,up}sample_scales_linear_half_pixel_symmetric.
TEST(OnnxResize, LinearHalfPixelSymmetricGoldensFromTheOnnxTests) {
  OpCase down = resize_scales({1, 1, 1, 0.6f});
  down.text("mode", "linear").text("coordinate_transformation_mode", "half_pixel_symmetric");
  EXPECT_TRUE(all_close(down.run({values({1, 2, 3, 4}, {1, 1, 1, 4})}),
                        values({1.6666666f, 3.3333333f}, {1, 1, 1, 2}), Tolerance::op_f32()));
  OpCase up = resize_scales({1, 1, 2.3f, 2.94f});
  up.text("mode", "linear").text("coordinate_transformation_mode", "half_pixel_symmetric");
  EXPECT_TRUE(all_close(up.run({values({1, 2, 3, 4}, {1, 1, 2, 2})}),
                        values({1.0f,        1.15986395f, 1.5f,        1.84013605f, 2.0f,
                                1.56521738f, 1.72508133f, 2.06521738f, 2.40535343f, 2.56521738f,
                                2.43478262f, 2.59464657f, 2.93478262f, 3.27491867f, 3.43478262f,
                                3.0f,        3.15986395f, 3.5f,        3.84013605f, 4.0f},
                               {1, 1, 4, 5}),
                        Tolerance::op_f32()));
  // 5 rows by 0.5: length 2.5, out 2, offset 2.5 · (1 − 2 / 2.5) = 0.5, so nearest reads rows
  // 0.5 + (x + 0.5) / 0.5 − 0.5 = 1 and 3 (half_pixel reads 0.5 and 2.5, rounded to 0 and 2).
  OpCase odd = resize_scales({1, 1, 0.5f, 1});
  odd.text("coordinate_transformation_mode", "half_pixel_symmetric");
  EXPECT_EQ(odd.run({values({0, 1, 2, 3, 4}, {1, 1, 5, 1})}).to_vector(),
            (std::vector<float>{1, 3}));
}

TEST(OnnxResize, Opset11WithEmptyRoiAndScalesNames) {
  // Opset 11 lists roi and scales as required; exporters still write "" for them.
  OpCase c = resize_sizes({1, 1, 4, 4});
  c.opset(11);
  EXPECT_EQ(c.run({values({1, 2, 3, 4}, {1, 1, 2, 2})}).to_vector(),
            (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

TEST(OnnxResize, PytorchHalfPixelDiffersOnlyAtOutputSize1) {
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  // half_pixel to 1×1: x_in = 0.5/0.5 − 0.5 = 0.5 in both dims → mean of all four = 2.5.
  OpCase hp = resize_sizes({1, 1, 1, 1});
  hp.text("mode", "linear");
  EXPECT_EQ(hp.run({x}).to_vector(), (std::vector<float>{2.5f}));
  // pytorch_half_pixel: output size 1 → coordinate 0 → x[0, 0].
  OpCase pt = resize_sizes({1, 1, 1, 1});
  pt.text("mode", "linear").text("coordinate_transformation_mode", "pytorch_half_pixel");
  EXPECT_EQ(pt.run({x}).to_vector(), (std::vector<float>{1.0f}));
}

TEST(OnnxResize, ChannelsLastKeepsFormatAndValues) {
  Generator gen(5);
  const Tensor x = uniform({2, 3, 5, 4}, 1.0, gen);
  // Bit-identical in both layouts, also when the channels (NHWC's innermost dimension) are
  // resized too.
  for (const std::vector<float>& scales :
       {std::vector<float>{1, 1, 1.5f, 2}, std::vector<float>{1, 2.5f, 0.6f, 1.25f}}) {
    for (const char* mode : {"nearest", "linear"}) {
      OpCase c = resize_scales(scales);
      c.text("mode", mode);
      EXPECT_TRUE(c.module()->accepts_channels_last());
      const Tensor y = c.run({x});
      EXPECT_EQ(y.size(3), static_cast<std::int64_t>(std::floor(4 * scales[3])));
      const Tensor ycl = c.run({to_channels_last(x)});
      EXPECT_TRUE(is_channels_last(ycl));
      EXPECT_TRUE(all_close(ycl, y, Tolerance::exact())) << mode << " " << scales[1];
    }
  }
}

TEST(OnnxResize, NearestOnInt64IsExactAndAxesSelectDims) {
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  OpCase c = resize_scales({2});
  c.ints("axes", {-1}).opset(18);
  const Tensor y = c.run({i64({big, 5}, {1, 2})});
  EXPECT_EQ(y.sizes(), (Shape{1, 4}));
  EXPECT_EQ(i64_values(y), (std::vector<std::int64_t>{big, big, 5, 5}));
}

TEST(OnnxResize, RuntimeScalesAndSizes) {
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  OpCase c("Resize", {"x", "roi", "scales", "sizes"});
  const Tensor none = empty({0});
  EXPECT_EQ(c.run({x, none, none, i64({1, 1, 4, 2})}).sizes(), (Shape{1, 1, 4, 2}));
  EXPECT_EQ(c.run({x, none, scales_tensor({1, 1, 1, 2}), i64({})}).sizes(), (Shape{1, 1, 2, 4}));
  expect_errors({
      {"both at run time",
       [&] {
         c.run({x, none, scales_tensor({1, 1, 1, 2}), i64({1, 1, 4, 2})});
       },
       "Resize: both scales and sizes are given; exactly one is allowed"},
      {"neither at run time",
       [&] {
         c.run({x, none, none, i64({})});
       },
       "Resize: neither scales nor sizes is given"},
      {"scales length",
       [&] {
         c.run({x, none, scales_tensor({1, 2}), i64({})});
       },
       "Resize: 2 scales [1, 2] for 4 axes of input [1, 1, 2, 2]"},
      {"zero scale",
       [&] {
         c.run({x, none, scales_tensor({1, 1, 0, 2}), i64({})});
       },
       "Resize: scale 0 must be positive and finite"},
      {"negative size",
       [&] {
         c.run({x, none, none, i64({1, 1, -2, 2})});
       },
       "Resize: negative size -2 in sizes [1, 1, -2, 2]"},
  });
}

// GridSample: hand-computed points (reference::grid_sample has the formulas); ONNX's own
// test_gridsample_* node tests run in the conformance suite.
TEST(OnnxGridSample, LinearNearestAndPadding) {
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  // align_corners: −1 and 1 are the edge elements' centres. Points (x, y): the four corners,
  // the centre, and (−2, −2), which lies half an element outside both axes (x = −0.5).
  const Tensor grid = values({-1, -1, 1, 1, 0, 0, 1, -1, -2, -2}, {1, 1, 5, 2});
  auto sample = [&](const std::string& padding) {
    OpCase c("GridSample", {"x", "g"});
    c.integer("align_corners", 1).text("padding_mode", padding);
    DispatchLog log;  // 4-d float32: refold's kernel (native/grid_sample.h)
    std::vector<float> y = c.run({x, grid}).to_vector();
    EXPECT_THAT(log.take(), ::testing::Contains("grid_sample: native"));
    return y;
  };
  // zeros: (−0.5, −0.5) weighs element (0, 0) by 0.5 · 0.5 and reads 0 elsewhere.
  EXPECT_EQ(sample("zeros"), (std::vector<float>{1, 4, 2.5, 2, 0.25}));
  EXPECT_EQ(sample("border"), (std::vector<float>{1, 4, 2.5, 2, 1}));        // clamped to (0, 0)
  EXPECT_EQ(sample("reflection"), (std::vector<float>{1, 4, 2.5, 2, 2.5}));  // to (0.5, 0.5)
  // nearest, edges at ±1: x = ((g + 1) · 4 − 1) / 2 = 1, 1.5, 2 rounds half to even: 1, 2, 2.
  OpCase n("GridSample", {"x", "g"});
  n.text("mode", "nearest");
  EXPECT_EQ(n.run({values({10, 11, 12, 13}, {1, 1, 1, 4}),
                   values({-0.25F, 0, 0, 0, 0.25F, 0}, {1, 1, 3, 2})})
                .to_vector(),
            (std::vector<float>{11, 12, 12}));
  // Opset 20: any rank. The centre of a 2×2×2 volume is the mean; (1, 1, 1) the last element.
  OpCase v("GridSample", {"x", "g"});
  v.opset(20).text("mode", "linear").integer("align_corners", 1);
  EXPECT_EQ(v.run({values({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 2, 2}),
                   values({0, 0, 0, 1, 1, 1}, {1, 1, 1, 2, 3})})
                .to_vector(),
            (std::vector<float>{3.5, 7}));
}

TEST(OnnxGridSample, Errors) {
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  EXPECT_TRUE(testing::throws_error(
      [&] {
        OpCase("GridSample", {"x", "g"}).text("mode", "linear").module();
      },
      "unknown mode 'linear' (expected bilinear, nearest or bicubic at opset"));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        OpCase("GridSample", {"x", "g"}).text("padding_mode", "wrap").module();
      },
      "unknown padding_mode 'wrap'"));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        OpCase("GridSample", {"x", "g"}).run({x, values({0, 0, 0}, {1, 1, 1, 3})});
      },
      "grid_sample: grid must be [N, O1, …, O2, 2] for X [1, 1, 2, 2], got [1, 1, 1, 3]"));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        OpCase("GridSample", {"x", "g"})
            .opset(20)
            .text("mode", "cubic")
            .run({values({0, 1, 2, 3, 4, 5, 6, 7}, {1, 1, 2, 2, 2}),
                  values({0, 0, 0}, {1, 1, 1, 1, 3})});
      },
      "grid_sample: cubic mode needs a 4-d X, got 5-d"));
}

TEST(OnnxResize, BuildErrors) {
  const Tensor s = scales_tensor({1, 1, 2, 2});
  expect_errors({
      {"both constants",
       [&] {
         OpCase("Resize", {"x", "", "s", "z"})
             .constant("s", s)
             .constant("z", i64({1, 1, 4, 4}))
             .module();
       },
       "both scales and sizes are given; exactly one is allowed"},
      {"neither", [&] { OpCase("Resize", {"x"}).module(); }, "neither scales nor sizes is given"},
      {"neither, both empty",
       [&] {
         OpCase("Resize", {"x", "", "s", "z"})
             .constant("s", empty({0}))
             .constant("z", i64({}))
             .module();
       },
       "neither scales nor sizes is given (both are empty)"},
      {"unknown mode",
       [&] {
         resize_scales({1, 1, 2, 2}).text("mode", "area").module();
       },
       "unknown mode 'area' (expected nearest, linear or cubic)"},
      {"tf_crop_and_resize",
       [&] {
         resize_scales({1, 1, 2, 2})
             .text("coordinate_transformation_mode", "tf_crop_and_resize")
             .module();
       },
       "unsupported: coordinate_transformation_mode 'tf_crop_and_resize' (refold implements "
       "half_pixel, pytorch_half_pixel, asymmetric, tf_half_pixel_for_nn, align_corners and "
       "half_pixel_symmetric)"},
      {"unknown coordinates",
       [&] {
         resize_scales({1, 1, 2, 2}).text("coordinate_transformation_mode", "corner").module();
       },
       "unknown coordinate_transformation_mode 'corner'"},
      {"nearest_mode",
       [&] {
         resize_scales({1, 1, 2, 2}).text("nearest_mode", "round").module();
       },
       "unknown nearest_mode 'round' (expected round_prefer_floor, round_prefer_ceil, floor or "
       "ceil)"},
      {"antialias",
       [&] {
         resize_scales({1, 1, 2, 2}).integer("antialias", 2).module();
       },
       "antialias must be 0 or 1 (got 2)"},
      {"keep_aspect_ratio_policy",
       [&] {
         resize_scales({1, 1, 2, 2}).text("keep_aspect_ratio_policy", "not_larger").module();
       },
       "unsupported: keep_aspect_ratio_policy 'not_larger' (refold implements stretch)"},
      {"negative constant scale",
       [&] {
         resize_scales({1, 1, -2, 2}).module();
       },
       "scales must be positive and finite (got [1, 1, -2, 2])"},
      {"opset 10",
       [&] {
         resize_scales({1, 1, 2, 2}).opset(10).module();
       },
       "Resize at opset 10 is not implemented (refold implements it from opset 11)"},
      {"linear int64",
       [&] {
         resize_scales({2}).text("mode", "linear").run({i64({1, 2})});
       },
       "resize: linear and cubic modes need a float input, got int64"},
  });
}

}  // namespace
}  // namespace refold::testing
