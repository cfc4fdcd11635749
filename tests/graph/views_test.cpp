// Views between the ops that only move data (graph::Op::reads_views, ops::ViewOp): a chain of
// them copies once, no other op is handed a view dense in no format, and Tensor::view is
// PyTorch's view rule.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "onnx/ops_tensor_helpers.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/graph/graph.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"

namespace refold::graph {
namespace {

using testing::i64;

bool dense(const Tensor& t) {
  return t.is_contiguous() || (t.dim() == 4 && t.is_contiguous(MemoryFormat::ChannelsLast));
}

TEST(TensorView, SplitsAndMergesRunsOfChannelsLastMemory) {
  // NHWC memory [N, H·W, C] viewed as [N, heads, C / heads, H·W]: C splits, H and W merge.
  const Tensor x = randn({1, 6, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor v = x.view({1, 2, 3, 20});
  ASSERT_TRUE(v.defined());
  EXPECT_TRUE(v.shares_storage(x));
  EXPECT_EQ(Shape(v.strides().begin() + 1, v.strides().end()), (Shape{3, 1, 6}));
  EXPECT_FALSE(dense(v));
  EXPECT_EQ(v.to_vector(), x.reshape({1, 2, 3, 20}).to_vector());
  // -1 and size-1 dims, and a view of the view.
  EXPECT_EQ(x.view({1, 2, 3, 4, -1}).view({2, 3, 20}).to_vector(),
            x.reshape({2, 3, 20}).to_vector());
}

// A size-1 dim addresses nothing, but its stride decides what layout the view suggests: it
// gets the extent of the dims after it, so NHWC memory viewed or sliced keeps suggesting
// channels_last (and a Concat of such views stays NHWC).
TEST(TensorView, SizeOneDimsKeepTheMemoryFormat) {
  const Tensor x = randn({1, 8, 5, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor same = x.view({1, 8, 5, 5});
  EXPECT_EQ(same.strides(), x.strides());
  EXPECT_EQ(same.suggest_memory_format(), MemoryFormat::ChannelsLast);
  const Tensor channels = reference::slice_view(x, {{0, 1, 1}, {2, 1, 3}, {0, 1, 5}, {0, 1, 5}});
  ASSERT_TRUE(channels.defined());
  EXPECT_EQ(channels.stride(0), x.stride(0));
  EXPECT_EQ(channels.suggest_memory_format(), MemoryFormat::ChannelsLast);
}

TEST(TensorView, IsUndefinedWhereTheStridesCannotExpressIt) {
  const Tensor x = randn({1, 6, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  // Merging C with H: they are not one run of memory in NHWC.
  EXPECT_FALSE(x.view({1, 24, 5}).defined());
  // A transposed matrix cannot be flattened, a contiguous one always can.
  EXPECT_FALSE(randn({3, 4}).permute({1, 0}).view({12}).defined());
  EXPECT_TRUE(randn({3, 4}).view({2, -1}).defined());
  EXPECT_THROW(randn({3, 4}).view({5, -1}), Error);
}

// EfficientViT's multi-scale attention entry: an NHWC activation reshaped into heads,
// transposed to [heads, tokens, dims] and sliced into q and v; q goes through a Relu (an op
// that does not read views), v to the graph's output.
testing::GraphBuilder heads_chain() {
  testing::GraphBuilder b;
  const auto x = b.input("x", {1, 12, 4, 5});
  const auto heads = b.node("Reshape", {x, b.constant("shape", i64({1, 2, 6, -1}))}, {}, "reshape");
  const auto tokens =
      b.node("Transpose", {heads},
             testing::attrs({{"perm", std::vector<std::int64_t>{0, 1, 3, 2}}}), "transpose");
  const auto last = b.constant("last", i64({-1}));
  const auto q = b.node(
      "Slice", {tokens, b.constant("q_start", i64({0})), b.constant("q_end", i64({3})), last}, {},
      "q");
  const auto v = b.node(
      "Slice", {tokens, b.constant("v_start", i64({3})), b.constant("v_end", i64({6})), last}, {},
      "v");
  b.output(b.node("Relu", {q}, {}, "relu"));
  b.output(v);
  return b;
}

TEST(GraphViews, AChainOfDataMovesCopiesOnceAndHandsOtherOpsDenseTensors) {
  testing::GraphBuilder b = heads_chain();
  graph::Graph* g = &b.graph();
  const Tensor x = randn({1, 12, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor tokens = x.reshape({1, 2, 6, 20}).permute({0, 1, 3, 2}).contiguous();
  const Tensor want_q = functional::relu(tokens.as_strided({1, 2, 20, 3}, tokens.strides(), 0));
  const Tensor want_v = tokens.as_strided({1, 2, 20, 3}, tokens.strides(), 3).contiguous();

  std::map<std::string, Tensor> seen;  // each node's first input, as the node was handed it
  DispatchLog log;
  const auto out = g->run({x}, [&](const Node& n, const std::vector<Tensor>& in,
                                   const std::vector<Tensor>&) { seen[n.name] = in[0]; });
  // What ran, as REFOLD_VERBOSE and the profile say: views, then one copy per reader that is not
  // a view op (the Relu's q; v, a graph output).
  const std::vector<std::string> ran = log.take();
  EXPECT_EQ(
      std::vector<std::string>(ran.begin(), ran.begin() + 4),
      (std::vector<std::string>{"Reshape: view", "Transpose: view", "Slice: copy", "Slice: copy"}))
      << fmt::format("{}", fmt::join(ran, "; "));
  EXPECT_EQ(out[0].to_vector(), want_q.to_vector());
  EXPECT_EQ(out[1].to_vector(), want_v.to_vector());
  // Reshape and Transpose made views of x's memory; the Slices read them.
  EXPECT_TRUE(seen.at("transpose").shares_storage(x));
  EXPECT_TRUE(seen.at("q").shares_storage(x));
  EXPECT_FALSE(dense(seen.at("q")));
  // The Relu, which does not read views, and the graph's outputs get dense tensors.
  EXPECT_TRUE(dense(seen.at("relu")));
  EXPECT_FALSE(seen.at("relu").shares_storage(x));
  EXPECT_TRUE(dense(out[0]) && dense(out[1]));
}

TEST(GraphViews, AViewOpWhoseOutputAnotherOpReadsReturnsItDense) {
  // Transpose → Relu: the permute is copied at the Transpose, as before views.
  testing::GraphBuilder b;
  const auto t = b.node("Transpose", {b.input("x", {3, 4, 5})},
                        testing::attrs({{"perm", std::vector<std::int64_t>{1, 0, 2}}}));
  b.output(b.node("Relu", {t}, {}, "relu"));
  const Tensor x = randn({3, 4, 5});
  Tensor handed;
  const auto out = b.graph().run(
      {x}, [&](const Node& n, const std::vector<Tensor>& in, const std::vector<Tensor>&) {
        if (n.name == "relu") handed = in[0];
      });
  EXPECT_TRUE(handed.is_contiguous());
  EXPECT_FALSE(handed.shares_storage(x));
  EXPECT_EQ(out[0].to_vector(), functional::relu(x.permute({1, 0, 2}).contiguous()).to_vector());
}

// torch.roll(x, (2, 3), (1, 2)) as the exporters write it, Swin's shifted windows: per dim, two
// Slices joined by a Concat. Concat reads views, so each Slice is a view and each Concat copies
// once — the roll takes two copies, not six.
TEST(GraphViews, TorchRollsSlicesReachTheConcatAsViews) {
  testing::GraphBuilder b;
  const auto x = b.input("x", {1, 8, 8, 6});
  auto roll = [&](const std::string& in, std::int64_t axis, std::int64_t shift,
                  const std::string& name) {
    const auto axes = b.constant(name + "_axis", i64({axis}));
    const auto tail = b.node("Slice",
                             {in, b.constant(name + "_t0", i64({-shift})),
                              b.constant(name + "_t1", i64({1 << 30})), axes},
                             {}, name + "_tail");
    const auto head = b.node(
        "Slice",
        {in, b.constant(name + "_h0", i64({0})), b.constant(name + "_h1", i64({-shift})), axes}, {},
        name + "_head");
    return b.node("Concat", {tail, head}, testing::attrs({{"axis", axis}}), name);
  };
  b.output(roll(roll(x, 1, 2, "roll_h"), 2, 3, "roll_w"));
  const Tensor input = randn({1, 8, 8, 6});

  std::map<std::string, std::vector<Tensor>> seen;
  DispatchLog log;
  const auto out = b.graph().run({input}, [&](const Node& n, const std::vector<Tensor>& in,
                                              const std::vector<Tensor>&) { seen[n.name] = in; });
  const std::vector<std::string> ran = log.take();
  EXPECT_EQ(std::count(ran.begin(), ran.end(), "Slice: view"), 4)
      << fmt::format("{}", fmt::join(ran, "; "));
  EXPECT_EQ(std::count(ran.begin(), ran.end(), "Slice: copy"), 0);
  for (const Tensor& t : seen.at("roll_h")) EXPECT_TRUE(t.shares_storage(input));
  for (const Tensor& t : seen.at("roll_w")) EXPECT_FALSE(dense(t));
  // out[n, h, w, c] = x[n, (h − 2) mod 8, (w − 3) mod 8, c].
  Tensor want = empty({1, 8, 8, 6});
  for (std::int64_t h = 0; h < 8; ++h)
    for (std::int64_t w = 0; w < 8; ++w)
      for (std::int64_t c = 0; c < 6; ++c)
        want.set({0, h, w, c}, input.at({0, (h + 6) % 8, (w + 5) % 8, c}));
  EXPECT_EQ(out[0].to_vector(), want.to_vector());
  EXPECT_TRUE(out[0].is_contiguous());
}

// A detection head (YOLO, SSD): NHWC maps read as [N, C, H·W] and joined over H·W. The Reshapes
// are views of the NHWC memory, and the Concat's copy of each into the contiguous output is the
// one permute per map (counted as the memory-format seed's permutes are).
TEST(GraphViews, AHeadsReshapedMapsAreCopiedOnceByTheConcat) {
  testing::GraphBuilder b;
  std::vector<std::string> flat;
  std::vector<Tensor> maps;
  for (const std::int64_t size : {8, 4}) {
    const std::string name = fmt::format("map{}", size);
    flat.push_back(
        b.node("Reshape",
               {b.input(name, {1, 6, size, size}), b.constant(name + ".shape", i64({1, 6, -1}))},
               {}, name + ".flat"));
    maps.push_back(randn({1, 6, size, size}).contiguous(MemoryFormat::ChannelsLast));
  }
  b.output(b.node("Concat", flat, testing::attrs({{"axis", std::int64_t{2}}}), "cat"));
  DispatchLog log;
  reset_permute_count();
  const auto out = b.graph().run(maps);
  const std::vector<std::string> ran = log.take();
  EXPECT_EQ(std::count(ran.begin(), ran.end(), "Reshape: view"), 2)
      << fmt::format("{}", fmt::join(ran, "; "));
  EXPECT_EQ(permute_count(), 2u);
  const Tensor want = functional::cat(
      {maps[0].contiguous().reshape({1, 6, 64}), maps[1].contiguous().reshape({1, 6, 16})}, 2);
  EXPECT_EQ(out[0].to_vector(), want.to_vector());
}

}  // namespace
}  // namespace refold::graph
