// A Linear along a non-last axis — Transpose → MatMul (→ Add) → Transpose back, token mixing and
// talking heads — becomes one AxisLinear node (passes/axis_linear.h) that computes the same, on
// each of its kernels (native::channel_mix for a small W, oneDNN's GEMM for a large one, a linear
// over the rows of a channels_last x); the near misses stay.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/native/channel_mix.h"
#include "ops/axis_linear.h"
#include "passes/passes.h"
#include "refold/reference.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::apply_pass;
using testing::attrs;
using testing::GraphBuilder;
using testing::has_note;
using testing::notes_of;

std::vector<std::int64_t> order(std::initializer_list<std::int64_t> values) { return values; }

TEST(AxisLinearPattern, TalkingHeadsAndTokenMixingBecomeOneNode) {
  struct Case {
    const char* name;
    Shape x;
    std::vector<std::int64_t> perm, back;
    std::int64_t k, n;
    bool bias, bias_first;
  };
  for (const Case& c : {
           // CaiT's talking heads: [B, heads, N, N] → heads last → Linear(4, 4) → back.
           Case{"talking heads",
                {1, 4, 9, 9},
                order({0, 2, 3, 1}),
                order({0, 3, 1, 2}),
                4,
                4,
                true,
                true},
           // MLP-Mixer's token mixing: [B, tokens, C].transpose(1, 2) → Linear(16, 24) → back.
           Case{
               "token mixing", {2, 16, 5}, order({0, 2, 1}), order({0, 2, 1}), 16, 24, true, false},
           Case{"no bias", {2, 16, 5}, order({0, 2, 1}), order({0, 2, 1}), 16, 16, false, false},
       }) {
    SCOPED_TRACE(c.name);
    GraphBuilder b;
    const std::string x = b.input("x", c.x);
    const std::string t = b.node("Transpose", {x}, attrs({{"perm", c.perm}}), "to_last");
    std::string y = b.node("MatMul", {t, b.constant("w", randn({c.k, c.n}))}, {}, "mix");
    if (c.bias) {
      const std::string bias = b.constant("b", randn({c.n}));
      y = b.node("Add", c.bias_first ? std::vector{bias, y} : std::vector{y, bias}, {}, "add");
    }
    b.output(b.node("Transpose", {y}, attrs({{"perm", c.back}}), "back"));
    const std::vector<Tensor> in = b.random_inputs();
    const Tensor before = b.graph().run(in)[0];
    const passes::PassReport r = apply_pass(b, passes::canonicalize);
    EXPECT_TRUE(has_note(r, "as AxisLinear along axis 1 of 'x'")) << notes_of(r);
    ASSERT_EQ(b.count("AxisLinear"), 1) << b.graph().dump();
    EXPECT_EQ(b.count("Transpose") + b.count("MatMul"), 0) << b.graph().dump();
    const graph::Node& n = b.graph().nodes()[*b.graph().find_node("back")];
    EXPECT_EQ(n.domain, "refold");
    EXPECT_EQ(n.parts.size(), c.bias ? 4u : 3u);
    // The written file is the exporter's nodes again, and computes the same.
    const auto written = testing::written_back(b.graph());
    EXPECT_EQ(std::count_if(written->nodes().begin(), written->nodes().end(),
                            [](const graph::Node& w) { return w.op_type == "Transpose"; }),
              2);
    EXPECT_TRUE(testing::model_close(written->run(in)[0], before));
  }
}

// The transposes do not undo each other, an intermediate has a second reader, the product is
// along the last axis already, or the weight is computed: no AxisLinear.
TEST(AxisLinearPattern, NearMissesStay) {
  enum class Miss { NotInverse, ReadTwice, LastAxis, ComputedWeight };
  for (const Miss miss :
       {Miss::NotInverse, Miss::ReadTwice, Miss::LastAxis, Miss::ComputedWeight}) {
    SCOPED_TRACE(static_cast<int>(miss));
    GraphBuilder b;
    const std::string x = b.input("x", {1, 4, 6, 6});
    const auto perm = miss == Miss::LastAxis ? order({0, 2, 1, 3}) : order({0, 2, 3, 1});
    const std::string t = b.node("Transpose", {x}, attrs({{"perm", perm}}));
    const std::string w = miss == Miss::ComputedWeight
                              ? b.node("Relu", {b.input("w", {4, 6})})
                              : b.constant("w", randn({miss == Miss::LastAxis ? 6 : 4, 6}));
    const std::string m = b.node("MatMul", {t, w});
    const auto back = miss == Miss::NotInverse ? order({0, 3, 2, 1}) : order({0, 3, 1, 2});
    b.output(b.node("Transpose", {m}, attrs({{"perm", miss == Miss::LastAxis ? perm : back}})));
    if (miss == Miss::ReadTwice) b.output(b.node("Relu", {m}));
    apply_pass(b, passes::canonicalize);  // a computed W's product may become a ScaledMatMul
    EXPECT_EQ(b.count("AxisLinear"), 0) << b.graph().dump();
  }
}

// Each kernel of ops::AxisLinear against the reference's transpose → linear → transpose.
TEST(AxisLinearOp, EveryKernelComputesTheLinearAlongTheAxis) {
  struct Case {
    const char* name;
    Shape x;
    std::int64_t axis, n;
    bool channels_last;
  };
  for (const Case& c : {
           Case{"a small W: channel_mix", {2, 4, 9, 70}, 1, 5, false},
           Case{"a large W: oneDNN's GEMM", {3, 24, 33}, 1, 20, false},
           Case{"an inner axis", {2, 3, 8, 5}, 2, 6, false},
           Case{"channels_last: rows", {2, 6, 5, 7}, 1, 3, true},
       }) {
    SCOPED_TRACE(c.name);
    Tensor x = randn(c.x);
    if (c.channels_last) x = x.contiguous(MemoryFormat::ChannelsLast);
    const Tensor w = randn({x.size(c.axis), c.n});
    const Tensor b = randn({c.n});
    ops::AxisLinear op(c.axis);
    for (const Tensor& bias : {b, Tensor()}) {
      std::vector<Tensor> inputs = {x, w};
      if (bias.defined()) inputs.push_back(bias);
      const Tensor y = op.run(inputs)[0];
      Shape last;
      for (std::int64_t d = 0; d < x.dim(); ++d)
        if (d != c.axis) last.push_back(d);
      last.push_back(c.axis);
      Shape inverse(last.size());
      for (std::size_t d = 0; d < last.size(); ++d) inverse[static_cast<std::size_t>(last[d])] = d;
      const Tensor expected =
          reference::linear(x.permute(last), w.permute({1, 0}), bias).permute(inverse);
      EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::op_f32()));
      if (c.channels_last) {
        EXPECT_TRUE(y.is_contiguous(MemoryFormat::ChannelsLast));
      }
    }
  }
  ops::AxisLinear op(1);
  EXPECT_TRUE(testing::throws_error(
      [&] {
        op.run({randn({2, 4, 3}), randn({5, 2})});
      },
      "does not match W [5, 2]"));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        op.run({randn({2, 4, 3}), randn({4, 2}), randn({3})});
      },
      "bias [3]"));
}

// The small-W kernel itself: the sums of the reference, full blocks of 64 columns and a tail; a W
// over kMaxChannelMix is declined for oneDNN's GEMM.
TEST(AxisLinearOp, ChannelMixTakesOnlyASmallW) {
  if (!cpu_has_avx2_fma()) GTEST_SKIP() << "no AVX2/FMA";
  const Tensor x = randn({3, 4, 64 * 2 + 13}), w = randn({4, 6}), b = randn({6});
  std::string declined;
  const Tensor y = native::channel_mix(x, w, b, &declined);
  ASSERT_TRUE(y.defined()) << declined;
  const Tensor expected =
      reference::linear(x.permute({0, 2, 1}), w.permute({1, 0}), b).permute({0, 2, 1});
  EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::op_f32()));
  EXPECT_FALSE(native::channel_mix(randn({1, 8, 8}), randn({8, 8}), Tensor(), &declined).defined());
  EXPECT_NE(declined.find("kMaxChannelMix"), std::string::npos) << declined;
}

}  // namespace
}  // namespace refold
