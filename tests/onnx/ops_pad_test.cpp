// Pad's modes (src/ops/pad.cpp): reflect, edge and wrap on worked examples (numpy.pad's), pads
// larger than the dimension, crops before padding, axes, int64 data, the opset 2–10 attribute
// form, channels_last, and the error messages. The ONNX backend tests test_*_pad and the
// pytorch-converted Reflection/Replication/ZeroPad2d run in conformance.
#include <gtest/gtest.h>

#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace pad_ops {

using F32s = std::vector<float>;

Tensor x3() { return values({1, 2, 3}, {3}); }

std::vector<float> pad(const Tensor& x, std::vector<std::int64_t> pads, const char* mode) {
  OpCase c("Pad", {"x", "pads"});
  c.constant("pads", i64(std::move(pads))).text("mode", mode);
  return c.run({x}).to_vector();
}

TEST(OnnxPadModes, ReflectEdgeWrap) {
  const Tensor x = values({1, 2, 3}, {3});
  EXPECT_EQ(pad(x, {2, 2}, "reflect"), (F32s{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(pad(x, {2, 2}, "edge"), (F32s{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(pad(x, {2, 2}, "wrap"), (F32s{2, 3, 1, 2, 3, 1, 2}));
  // Beyond the dimension: reflect keeps mirroring (period 2·(3 − 1)), wrap keeps repeating.
  EXPECT_EQ(pad(x, {5, 0}, "reflect"), (F32s{2, 1, 2, 3, 2, 1, 2, 3}));
  EXPECT_EQ(pad(x, {0, 4}, "wrap"), (F32s{1, 2, 3, 1, 2, 3, 1}));
  // A size-1 dimension reflects to itself; negative pads crop first, then the rest pads.
  EXPECT_EQ(pad(values({7}, {1}), {2, 1}, "reflect"), (F32s{7, 7, 7, 7}));
  EXPECT_EQ(pad(values({1, 2, 3, 4}, {4}), {-1, 2}, "edge"), (F32s{2, 3, 4, 4, 4}));
  // The spec's example: [[1.0, 1.2], [2.3, 3.4], [4.5, 5.7]], pads [0, 2, 0, 0].
  const Tensor m = values({1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f}, {3, 2});
  EXPECT_EQ(pad(m, {0, 2, 0, 0}, "reflect"),
            (F32s{1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
  EXPECT_EQ(pad(m, {0, 2, 0, 0}, "edge"),
            (F32s{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
}

TEST(OnnxPadModes, AxesInt64AttributeFormAndLayouts) {
  // axes (opset 18): pads only the last axis.
  OpCase axes("Pad", {"x", "pads", "", "axes"});
  axes.opset(18).constant("pads", i64({1, 1})).constant("axes", i64({-1})).text("mode", "wrap");
  EXPECT_EQ(axes.run({values({1, 2, 3, 4}, {2, 2})}).to_vector(), (F32s{2, 1, 2, 1, 4, 3, 4, 3}));
  // int64 data: constant (with its value) and edge, exactly.
  const std::int64_t big = (std::int64_t{1} << 53) + 1;
  OpCase ints("Pad", {"x", "pads", "v"});
  ints.constant("pads", i64({1, 0})).constant("v", i64({-5}, {}));
  EXPECT_EQ(i64_values(ints.run({i64({big, 2})})), (std::vector<std::int64_t>{-5, big, 2}));
  OpCase edge("Pad", {"x", "pads"});
  edge.constant("pads", i64({0, 1})).text("mode", "edge");
  EXPECT_EQ(i64_values(edge.run({i64({big})})), (std::vector<std::int64_t>{big, big}));
  // Opsets 2–10: pads and value are attributes.
  OpCase v2("Pad", {"x"});
  v2.opset(2).ints("pads", {1, 1}).real("value", 9.0f);
  EXPECT_EQ(v2.run({x3()}).to_vector(), (F32s{9, 1, 2, 3, 9}));
  OpCase v2_reflect("Pad", {"x"});
  v2_reflect.opset(10).ints("pads", {0, 2}).text("mode", "reflect");
  EXPECT_EQ(v2_reflect.run({x3()}).to_vector(), (F32s{1, 2, 3, 2, 1}));
  // A 4-d reflect pad of H and W: channels_last in, channels_last out, the same values.
  const Tensor x = random({1, 3, 4, 5}, 1);
  OpCase cl("Pad", {"x", "pads"});
  cl.constant("pads", i64({0, 0, 2, 1, 0, 0, 1, 3})).text("mode", "reflect");
  const Tensor y = cl.run({to_channels_last(x)});
  EXPECT_TRUE(is_channels_last(y));
  EXPECT_EQ(y.sizes(), (Shape{1, 3, 7, 9}));
  EXPECT_TRUE(all_close(y, cl.run({x}), Tolerance::exact()));
  EXPECT_FLOAT_EQ(y.at({0, 1, 0, 0}), x.at({0, 1, 2, 1}));  // reflected twice over
}

TEST(OnnxPadModes, Errors) {
  expect_errors({
      {"mode",
       [] {
         OpCase("Pad", {"x", "p"}).text("mode", "mirror").module();
       },
       "unknown Pad mode 'mirror' (expected constant, reflect, edge or wrap)"},
      {"no pads attribute", [] { OpCase("Pad", {"x"}).opset(2).module(); },
       "the pads attribute is required"},
      {"odd pads attribute", [] { OpCase("Pad", {"x"}).opset(2).ints("pads", {1}).module(); },
       "pads must have an even length, got 1 ([1])"},
      {"empty dimension",
       [] {
         OpCase("Pad", {"x", "p"}).text("mode", "reflect").run({zeros({0, 2}), i64({1, 0, 0, 0})});
       },
       "pad: mode 'reflect' cannot pad dimension 0, which has no elements"},
      {"crop",
       [] {
         OpCase("Pad", {"x", "p"}).text("mode", "edge").run({zeros({2}), i64({-2, -1})});
       },
       "pad: pads (-2, -1) crop dimension 0 (size 2) below zero"},
      {"pads length",
       [] {
         OpCase("Pad", {"x", "p"}).text("mode", "wrap").run({zeros({2}), i64({1, 1, 1, 1})});
       },
       "Pad: pads has 4 values; expected 2 (2 × 1 axes)"},
  });
}

}  // namespace pad_ops
}  // namespace refold::testing
