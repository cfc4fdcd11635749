// ShuffleNetV2's unit — Concat → channel shuffle → Slices or Split — becomes one ChannelRoute
// (passes/channel_route.h) that computes the same values in both layouts, and is written back as
// the exporter's nodes; a Concat or the cuts alone join a shuffle too; the near misses stay.
// Then the router itself (kernels/native/channel_route.h): how it cuts routes into segments,
// and each segment kind in both layouts against a plain gather.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/channel_route.h"
#include "passes/passes.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::apply_pass;
using testing::attrs;
using testing::GraphBuilder;
using testing::has_note;
using testing::int64s;
using testing::notes_of;

enum class Cut { Slices, Split, None };

// a, b [2, 6, 3, 5] → Concat → shuffle of 2 groups (Reshape → Transpose → Reshape) → cut into
// halves (two Slices or a Split) or not → a Relu on each half (or on the whole).
// `concat`: false reads the shuffle's input from a Relu of a [2, 12, 3, 5] input instead.
GraphBuilder shuffle_unit(bool concat, Cut cut, bool shuffle_read_elsewhere = false) {
  GraphBuilder b;
  std::string x;
  if (concat) {
    x = b.node("Concat", {b.input("a", {2, 6, 3, 5}), b.input("b", {2, 6, 3, 5})},
               attrs({{"axis", std::int64_t{1}}}), "cat");
  } else {
    x = b.node("Relu", {b.input("a", {2, 12, 3, 5})}, {}, "first");
  }
  const auto r = b.node("Reshape", {x, b.constant("split", int64s({2, 2, 6, 3, 5}))}, {}, "r");
  const auto t = b.node("Transpose", {r},
                        attrs({{"perm", std::vector<std::int64_t>{0, 2, 1, 3, 4}}}), "shuffle");
  const auto s = b.node("Reshape", {t, b.constant("merge", int64s({2, 12, 3, 5}))}, {}, "merge");
  if (cut == Cut::Slices) {
    for (const auto& [from, to] : {std::pair<std::int64_t, std::int64_t>{0, 6}, {6, 12}})
      b.output(b.node("Relu", {b.node("Slice", {s, b.constant("starts", int64s({from})),
                                                b.constant("ends", int64s({to})),
                                                b.constant("axes", int64s({1}))})}));
  } else if (cut == Cut::Split) {
    for (const std::string& half :
         b.node_with_outputs("Split", {s, b.constant("halves", int64s({6, 6}))}, 2,
                             attrs({{"axis", std::int64_t{1}}})))
      b.output(b.node("Relu", {half}));
  } else {
    b.output(b.node("Relu", {s}));
  }
  if (shuffle_read_elsewhere) b.output(b.node("Sigmoid", {s}));
  return b;
}

TEST(ChannelRoutePattern, ShuffleNetUnitsBecomeOneNode) {
  struct Case {
    const char* name;
    bool concat;
    Cut cut;
    std::size_t parts, outputs;
  };
  for (const Case& c : {Case{"Concat, shuffle, two Slices", true, Cut::Slices, 4, 2},
                        Case{"Concat, shuffle, Split", true, Cut::Split, 3, 2},
                        Case{"Concat and shuffle", true, Cut::None, 2, 1},
                        Case{"shuffle and Slices", false, Cut::Slices, 3, 2}}) {
    SCOPED_TRACE(c.name);
    GraphBuilder b = shuffle_unit(c.concat, c.cut);
    const std::vector<Tensor> in = b.random_inputs();
    const std::vector<Tensor> before = b.graph().run(in);
    const passes::PassReport r = apply_pass(b, passes::canonicalize, /*exact=*/true);
    EXPECT_TRUE(has_note(r, "as one ChannelRoute")) << notes_of(r);
    ASSERT_EQ(b.count("ChannelRoute"), 1) << b.graph().dump();
    EXPECT_EQ(b.count("Concat") + b.count("PatchShuffle") + b.count("Slice") + b.count("Split"), 0)
        << b.graph().dump();
    const graph::Node& n = b.graph().nodes()[*b.graph().find_node("shuffle")];
    EXPECT_EQ(n.domain, "refold");
    EXPECT_EQ(n.parts.size(), c.parts);
    EXPECT_EQ(n.outputs.size(), c.outputs);
    // NHWC in, NHWC out, the same values.
    std::vector<Tensor> nhwc;
    for (const Tensor& t : in) nhwc.push_back(t.contiguous(MemoryFormat::ChannelsLast));
    const std::vector<Tensor> after = b.graph().run(nhwc);
    for (std::size_t i = 0; i < before.size(); ++i) {
      EXPECT_TRUE(after[i].is_contiguous(MemoryFormat::ChannelsLast));
      EXPECT_TRUE(testing::all_close(after[i], before[i], testing::Tolerance::exact()));
    }
    // The written file is the exporter's nodes again, and computes the same.
    const auto written = testing::written_back(b.graph());
    EXPECT_EQ(std::count_if(written->nodes().begin(), written->nodes().end(),
                            [](const graph::Node& w) { return w.op_type == "Transpose"; }),
              1);
    const std::vector<Tensor> reread = written->run(in);
    for (std::size_t i = 0; i < before.size(); ++i)
      EXPECT_TRUE(testing::all_close(reread[i], before[i], testing::Tolerance::exact()));
  }
}

// A shuffle with neither a Concat only it reads nor only cuts after it stays a PatchShuffle; a
// cut along another axis is not a channel route, but the Concat still joins the shuffle.
TEST(ChannelRoutePattern, NearMissesStay) {
  {
    GraphBuilder b = shuffle_unit(false, Cut::None);
    apply_pass(b, passes::canonicalize, /*exact=*/true);
    EXPECT_EQ(b.count("ChannelRoute"), 0) << b.graph().dump();
    EXPECT_EQ(b.count("PatchShuffle"), 1) << b.graph().dump();
  }
  {
    GraphBuilder b = shuffle_unit(false, Cut::Slices, /*shuffle_read_elsewhere=*/true);
    apply_pass(b, passes::canonicalize, /*exact=*/true);
    EXPECT_EQ(b.count("ChannelRoute"), 0) << b.graph().dump();
    EXPECT_EQ(b.count("Slice"), 2) << b.graph().dump();
  }
  {
    GraphBuilder b;
    const auto x = b.node("Concat", {b.input("a", {1, 4, 4, 4}), b.input("b", {1, 4, 4, 4})},
                          attrs({{"axis", std::int64_t{1}}}), "cat");
    const auto r = b.node("Reshape", {x, b.constant("split", int64s({1, 2, 4, 4, 4}))});
    const auto t = b.node("Transpose", {r},
                          attrs({{"perm", std::vector<std::int64_t>{0, 2, 1, 3, 4}}}), "shuffle");
    const auto s = b.node("Reshape", {t, b.constant("merge", int64s({1, 8, 4, 4}))});
    b.output(b.node("Slice", {s, b.constant("starts", int64s({0})), b.constant("ends", int64s({2})),
                              b.constant("axes", int64s({2}))}));
    const std::vector<Tensor> in = b.random_inputs();
    const Tensor before = b.graph().run(in)[0];
    apply_pass(b, passes::canonicalize, /*exact=*/true);
    EXPECT_EQ(b.count("ChannelRoute"), 1) << b.graph().dump();
    EXPECT_EQ(b.count("Slice"), 1) << "a Slice along H stays";
    EXPECT_TRUE(testing::all_close(b.graph().run(in)[0], before, testing::Tolerance::exact()));
  }
}

// ShuffleNet's halves are each one interleave of two runs; a concatenation is copies; an
// irregular route falls back to copies of one channel.
TEST(ChannelRouter, CutsRoutesIntoCopiesAndInterleaves) {
  using native::ChannelSource;
  // The halves of shuffle(concat(a, b)), a and b of 6 channels each.
  native::ChannelRoutes routes(2);
  for (std::int64_t c = 0; c < 12; ++c) {
    const std::int64_t i = c / 2, g = c % 2;  // shuffled channel c = group g's channel i
    routes[static_cast<std::size_t>(c / 6)].push_back({g, i});
  }
  routes.push_back({{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}});  // a concat
  routes.push_back({{1, 5}, {0, 3}, {1, 0}});                  // nothing regular
  const native::ChannelRouter router(routes);
  ASSERT_EQ(router.segments(0).size(), 1u);
  EXPECT_EQ(router.segments(0)[0].lanes, 2);
  EXPECT_EQ(router.segments(0)[0].length, 3);
  EXPECT_EQ(router.segments(1)[0].from[0], (ChannelSource{0, 3}));
  EXPECT_EQ(router.segments(1)[0].from[1], (ChannelSource{1, 3}));
  ASSERT_EQ(router.segments(2).size(), 2u);
  EXPECT_EQ(router.segments(2)[0].lanes, 1);
  EXPECT_EQ(router.segments(2)[0].length, 3);
  EXPECT_EQ(router.segments(2)[1].first, 3);
  EXPECT_EQ(router.segments(3).size(), 3u);
  EXPECT_THROW(native::ChannelRouter(native::ChannelRoutes(1)), Error);  // no channels
}

// Every segment kind, long enough for AVX2's 8-pair steps and a tail, in both layouts, against
// y_j[n][c] = x_k[n][ch] computed element by element.
TEST(ChannelRouter, RoutesMatchAPlainGatherInBothLayouts) {
  Generator gen(3);
  const std::vector<Tensor> inputs = {randn({2, 21, 3, 4}, {}, gen), randn({2, 19, 3, 4}, {}, gen)};
  native::ChannelRoutes routes(3);
  for (std::int64_t i = 0; i < 19; ++i) routes[0].push_back({0, i}), routes[0].push_back({1, i});
  for (std::int64_t i = 0; i < 21; ++i) routes[1].push_back({0, 20 - i});
  for (std::int64_t i = 0; i < 10; ++i) routes[2].push_back({1, i + 9});
  routes[2].push_back({0, 0});
  const native::ChannelRouter router(routes);
  for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
    std::vector<Tensor> given;
    for (const Tensor& x : inputs) given.push_back(x.contiguous(format));
    const std::vector<Tensor> ys = router.run(given, format);
    ASSERT_EQ(ys.size(), routes.size());
    for (std::size_t j = 0; j < routes.size(); ++j) {
      EXPECT_TRUE(ys[j].is_contiguous(format));
      const auto channels = static_cast<std::int64_t>(routes[j].size());
      Tensor expected = empty({2, channels, 3, 4});
      for (std::int64_t n = 0; n < 2; ++n) {
        for (std::int64_t c = 0; c < channels; ++c) {
          const native::ChannelSource s = routes[j][static_cast<std::size_t>(c)];
          const Tensor& x = inputs[static_cast<std::size_t>(s.input)];
          for (std::int64_t p = 0; p < 12; ++p)
            expected.data<float>()[(n * channels + c) * 12 + p] =
                x.data<float>()[(n * x.size(1) + s.channel) * 12 + p];
        }
      }
      EXPECT_TRUE(testing::all_close(ys[j], expected, testing::Tolerance::exact())) << j;
    }
  }
}

}  // namespace
}  // namespace refold
