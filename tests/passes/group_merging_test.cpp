// group-merging: Split of the channels → one Conv per piece → Concat becomes one grouped Conv
// where that is exact and costs at most twice the multiply-adds, and stays as it is
// (bit-identical) where it is not.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "passes/passes.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::attrs;
using testing::ConvSpec;
using testing::GraphBuilder;
using testing::has_note;
using testing::notes_of;
using Counts = std::map<std::string, int>;

const graph::Attributes kChannels = attrs({{"axis", std::int64_t{1}}});

// x [1, c·n, 9, 9] split into n equal pieces, conv `make(i, piece)` on each, concatenated.
template <typename Make>
void split_convs_concat(GraphBuilder& b, std::int64_t channels, std::size_t n, Make make) {
  const std::string x = b.input("x", {1, channels * static_cast<std::int64_t>(n), 9, 9});
  const std::vector<std::string> pieces = b.node_with_outputs("Split", {x}, n, kChannels);
  std::vector<std::string> outs;
  for (std::size_t i = 0; i < n; ++i) outs.push_back(make(i, pieces[i]));
  b.output(b.node("Concat", outs, kChannels));
}

passes::PassReport merge_and_compare(GraphBuilder& b) {
  return testing::apply_pass(b, passes::merge_grouped_convs);
}

// MixNet's grouped pointwise conv: two 1×1 convs, one with a bias, one without.
TEST(GroupMerging, PointwisePiecesBecomeAGroupedConv) {
  GraphBuilder b(1);
  split_convs_concat(b, 6, 2, [&](std::size_t i, const std::string& p) {
    return b.conv(p, 6, 10, 1, {.bias = i == 0});
  });
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"Conv", 1}})) << notes_of(r);
  EXPECT_TRUE(has_note(r, "into one conv of 2 groups, 1x1")) << notes_of(r);
}

// MixNet's mixed depthwise conv: 3×3, 5×5 and 7×7 kernels with "same" padding, stride 2.
TEST(GroupMerging, MixedDepthwiseKernelsBecomeOneDepthwiseConv) {
  GraphBuilder b(2);
  split_convs_concat(b, 4, 3, [&](std::size_t i, const std::string& p) {
    const std::int64_t k = 3 + 2 * static_cast<std::int64_t>(i);
    return b.conv(p, 4, 4, k, {.stride = 2, .pads = ConvSpec::same(k / 2), .groups = 4});
  });
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"Conv", 1}})) << notes_of(r);
  EXPECT_TRUE(has_note(r, "into one conv of 12 groups, 7x7")) << notes_of(r);
}

TEST(GroupMerging, LeavesWhatIsNotExactOrCostsTooMuchAlone) {
  {  // 1×1, 1×1 and 9×9 depthwise pieces: as one 9×9 conv, 2.9x the multiply-adds
    GraphBuilder b(3);
    split_convs_concat(b, 4, 3, [&](std::size_t i, const std::string& p) {
      const std::int64_t k = i < 2 ? 1 : 9;
      return b.conv(p, 4, 4, k, {.pads = ConvSpec::same(k / 2), .groups = 4});
    });
    const passes::PassReport r = testing::expect_left_alone(b, passes::merge_grouped_convs);
    EXPECT_TRUE(has_note(r, "would do")) << notes_of(r);
  }
  {  // paddings that do not align (3×3 convs, one padded 1 per side, one 2 top and left)
    GraphBuilder b(4);
    split_convs_concat(b, 4, 2, [&](std::size_t i, const std::string& p) {
      return b.conv(p, 4, 4, 3,
                    {.pads = i == 0 ? ConvSpec::same(1) : std::vector<std::int64_t>{2, 2, 0, 0}});
    });
    const passes::PassReport r = testing::expect_left_alone(b, passes::merge_grouped_convs);
    EXPECT_TRUE(has_note(r, "paddings do not align")) << notes_of(r);
  }
  {  // pieces whose groups differ in shape (4 → 4 dense beside 4 → 8)
    GraphBuilder b(5);
    split_convs_concat(b, 4, 2, [&](std::size_t i, const std::string& p) {
      return b.conv(p, 4, i == 0 ? 4 : 8, 1);
    });
    testing::expect_left_alone(b, passes::merge_grouped_convs);
  }
  {  // a conv output read by something else too
    GraphBuilder b(6);
    const std::string x = b.input("x", {1, 8, 9, 9});
    const std::vector<std::string> pieces = b.node_with_outputs("Split", {x}, 2, kChannels);
    const std::string y0 = b.conv(pieces[0], 4, 4, 1), y1 = b.conv(pieces[1], 4, 4, 1);
    b.output(b.node("Concat", {y0, y1}, kChannels));
    b.output(b.node("Relu", {y0}));
    testing::expect_left_alone(b, passes::merge_grouped_convs);
  }
  {  // a split along H
    GraphBuilder b(7);
    const std::string x = b.input("x", {1, 4, 8, 9});
    const std::vector<std::string> pieces =
        b.node_with_outputs("Split", {x}, 2, attrs({{"axis", std::int64_t{2}}}));
    b.output(b.node("Concat", {b.conv(pieces[0], 4, 4, 1), b.conv(pieces[1], 4, 4, 1)},
                    attrs({{"axis", std::int64_t{2}}})));
    testing::expect_left_alone(b, passes::merge_grouped_convs);
  }
}

}  // namespace
}  // namespace refold
