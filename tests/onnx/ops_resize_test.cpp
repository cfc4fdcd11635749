// Resize's cubic mode, antialias and Upsample (opsets 7–9) (src/ops/resize.cpp): Keys' weights
// worked out by hand for one coordinate (A = −0.75 and −0.5, exclude_outside), antialiased linear
// and cubic against ONNX's reference, identity at scale 1,
// channels_last, Upsample's nearest (repeat) and linear (asymmetric) in the attribute and the
// input form, and the error messages. The ONNX backend tests test_resize_*cubic* and
// test_upsample_nearest run in conformance.
#include <gtest/gtest.h>

#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace resize_ops {

using F32s = std::vector<float>;

OpCase cubic(const char* coordinates) {
  OpCase c("Resize", {"x", "", "scales"});
  c.opset(13).text("mode", "cubic").text("coordinate_transformation_mode", coordinates);
  c.constant("scales", values({1, 1, 1, 2}, {4}));
  return c;
}

TEST(OnnxResizeCubic, KeysWeightsWorkedOut) {
  // in = [1, 2, 4, 8], ×2, asymmetric: output 1 sits at 0.5, between inputs −1 … 2 (−1 reads
  // the edge) with ratio 0.5: weights (A/8, 1/2 − A/8, 1/2 − A/8, A/8) for A = −0.75:
  // −0.09375 · 1 + 0.59375 · 1 + 0.59375 · 2 − 0.09375 · 4 = 1.3125. Output 0 sits on input 0.
  const Tensor x = values({1, 2, 4, 8}, {1, 1, 1, 4});
  Tensor y = cubic("asymmetric").run({x});
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 1, 8}));
  EXPECT_FLOAT_EQ(y.to_vector()[0], 1.0f);
  EXPECT_FLOAT_EQ(y.to_vector()[1], 1.3125f);
  // A = −0.5: −0.0625 + 0.5625 + 1.125 − 0.25 = 1.375.
  OpCase a = cubic("asymmetric");
  a.real("cubic_coeff_a", -0.5f);
  EXPECT_FLOAT_EQ(a.run({x}).to_vector()[1], 1.375f);
  // exclude_outside: input −1's weight goes, the rest renormalized: 1.40625 / 1.09375.
  OpCase ex = cubic("asymmetric");
  ex.integer("exclude_outside", 1);
  EXPECT_FLOAT_EQ(ex.run({x}).to_vector()[1], 1.40625f / 1.09375f);
}

TEST(OnnxResizeCubic, ScaleOneIsTheIdentityInBothLayouts) {
  const Tensor x = random({1, 3, 4, 5}, 1);
  OpCase c("Resize", {"x", "", "scales"});
  c.opset(13).text("mode", "cubic").constant("scales", values({1, 1, 1, 1}, {4}));
  EXPECT_TRUE(c.close_in_both_layouts(x, x));
  OpCase up("Resize", {"x", "", "scales"});
  up.opset(13).text("mode", "cubic").constant("scales", values({1, 1, 2, 1.5f}, {4}));
  const Tensor y = up.run({to_channels_last(x)});
  EXPECT_TRUE(is_channels_last(y));
  EXPECT_TRUE(all_close(y, up.run({x}), Tolerance::op_f32()));
}

// antialias (opset 18) against ONNX's reference (onnx 1.23, onnx.reference.ReferenceEvaluator)
// on in = [1, 2, 4, …, 128]. Worked out for linear ×0.5, output 0: coordinate 0.5, the triangle
// stretched ×2 weighs inputs −1 (the edge), 0, 1, 2 by 0.25, 0.75, 0.75, 0.25, over their sum 2:
// (0.25 + 0.75 + 1.5 + 1) / 2 = 1.75.
TEST(OnnxResizeAntialias, MatchesOnnxReference) {
  const Tensor x = values({1, 2, 4, 8, 16, 32, 64, 128}, {1, 1, 1, 8});
  // `by` "scales" or "sizes": Resize's input 2 or 3.
  const auto resize = [&](const char* mode, const std::string& by, const Tensor& value) {
    OpCase c("Resize", by == "scales" ? std::vector<std::string>{"x", "", "scales"}
                                      : std::vector<std::string>{"x", "", "", "sizes"});
    c.opset(18).text("mode", mode).integer("antialias", 1).constant(by, value);
    return c;
  };
  const Tensor half = values({1, 1, 1, 0.5f}, {4});
  const Tensor three = i64({1, 1, 1, 3});
  EXPECT_TRUE(resize("linear", "scales", half)
                  .close_in_both_layouts(x, values({1.75f, 6.75f, 27, 92}, {1, 1, 1, 4})));
  EXPECT_TRUE(
      resize("linear", "sizes", three)
          .close_in_both_layouts(x, values({2.465116262f, 15, 77.767440796f}, {1, 1, 1, 3})));
  EXPECT_TRUE(
      resize("cubic", "scales", half)
          .close_in_both_layouts(
              x, values({1.19921875f, 4.74609375f, 21.26953125f, 95.328125f}, {1, 1, 1, 4})));
  OpCase excluded = resize("cubic", "sizes", three);
  excluded.real("cubic_coeff_a", -0.5f).integer("exclude_outside", 1);
  EXPECT_TRUE(excluded.close_in_both_layouts(
      x, values({1.524478674f, 11.846694946f, 76.119216919f}, {1, 1, 1, 3})));
  // Growing, antialias changes nothing: linear ×2 is plain linear.
  OpCase plain("Resize", {"x", "", "scales"});
  plain.opset(18).text("mode", "linear").constant("scales", values({1, 1, 1, 2}, {4}));
  EXPECT_TRUE(resize("linear", "scales", values({1, 1, 1, 2}, {4}))
                  .close_in_both_layouts(x, plain.run({x})));
}

TEST(OnnxUpsample, NearestRepeatsAndLinearIsAsymmetric) {
  const Tensor x = values({1, 2, 3, 4}, {1, 1, 2, 2});
  OpCase v7("Upsample", {"x"});
  v7.opset(7).node().attributes.set("scales", std::vector<float>{1, 1, 2, 3});
  const Tensor y = v7.run({x});
  EXPECT_EQ(y.sizes(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(y.to_vector(), (F32s{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,  //
                                 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  // Opset 9: scales is an input. Linear at x / scale: 0, 0.5, 1, 1.5 → [1, 1.5, 2, 2].
  OpCase v9("Upsample", {"x", "s"});
  v9.opset(9).text("mode", "linear");
  EXPECT_EQ(v9.run({values({1, 2}, {1, 2}), values({1, 2}, {2})}).to_vector(),
            (F32s{1, 1.5f, 2, 2}));
  // channels_last in, channels_last out.
  const Tensor r = random({1, 3, 2, 3}, 2);
  OpCase cl("Upsample", {"x", "s"});
  cl.opset(9).constant("s", values({1, 1, 2, 2}, {4}));
  EXPECT_TRUE(is_channels_last(cl.run({to_channels_last(r)})));
  EXPECT_TRUE(all_close(cl.run({to_channels_last(r)}), cl.run({r}), Tolerance::exact()));
}

TEST(OnnxResizeCubic, Errors) {
  expect_errors({
      {"exclude_outside",
       [] {
         OpCase("Resize", {"x", "", "s"}).integer("exclude_outside", 2).module();
       },
       "exclude_outside must be 0 or 1 (got 2)"},
      {"upsample mode",
       [] {
         OpCase("Upsample", {"x", "s"}).opset(9).text("mode", "cubic").module();
       },
       "unknown mode 'cubic' (expected nearest or linear)"},
      {"upsample empty scales",
       [] {
         OpCase c("Upsample", {"x"});
         c.opset(8).node().attributes.set("scales", std::vector<float>{});
         c.module();
       },
       "scales must not be empty"},
      {"upsample arity at 9", [] { OpCase("Upsample", {"x"}).opset(9).module(); },
       "expects 2 to 2 inputs, got 1"},
      {"upsample no scales", [] { OpCase("Upsample", {"x"}).opset(7).module(); },
       "the scales attribute is required"},
      {"upsample scales attribute at 9",
       [] {
         OpCase c("Upsample", {"x", "s"});
         c.opset(9).node().attributes.set("scales", std::vector<float>{1, 2});
         c.module();
       },
       "scales is an input from opset 9, not an attribute"},
      {"upsample scale 0",
       [] {
         OpCase("Upsample", {"x", "s"}).opset(9).constant("s", values({1, 0}, {2})).module();
       },
       "scales must be positive and finite (got [1, 0])"},
      {"upsample scales length",
       [] {
         OpCase("Upsample", {"x", "s"}).opset(9).run({zeros({2, 2}), values({2}, {1})});
       },
       "1 scales [2] for 2 axes of input [2, 2]"},
  });
}

}  // namespace resize_ops
}  // namespace refold::testing
