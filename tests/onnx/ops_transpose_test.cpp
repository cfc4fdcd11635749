// SpaceToDepth (src/ops/transpose.cpp): the spec's layout (DepthToSpace DCR's inverse), a round
// trip through DepthToSpace, channels_last, int64, and the error messages. The ONNX backend tests
// test_spacetodepth* run in conformance.
#include <gtest/gtest.h>

#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace transpose_ops {

TEST(OnnxSpaceToDepth, BlocksMoveIntoChannels) {
  // x = iota [1, 1, 2, 4], blocksize 2: x[h, w] = 4h + w. Output channel (i·2 + j) holds
  // x[2h' + i, 2w' + j]: [[0, 2]], [[1, 3]], [[4, 6]], [[5, 7]].
  OpCase c("SpaceToDepth", {"x"});
  c.integer("blocksize", 2);
  const Tensor y = c.run({iota({1, 1, 2, 4})});
  EXPECT_EQ(y.sizes(), (Shape{1, 4, 1, 2}));
  EXPECT_EQ(y.to_vector(), (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
  // DepthToSpace (DCR) undoes it, in both layouts; channels_last stays channels_last.
  const Tensor x = random({2, 3, 4, 6}, 1);
  OpCase back("DepthToSpace", {"x"});
  back.integer("blocksize", 2).text("mode", "DCR");
  EXPECT_TRUE(all_close(back.run({c.run({x})}), x, Tolerance::exact()));
  const Tensor cl = c.run({to_channels_last(x)});
  EXPECT_TRUE(is_channels_last(cl));
  EXPECT_TRUE(all_close(cl, c.run({x}), Tolerance::exact()));
  EXPECT_EQ(i64_values(c.run({i64({1, 2, 3, 4}, {1, 1, 2, 2})})),
            (std::vector<std::int64_t>{1, 2, 3, 4}));
}

TEST(OnnxSpaceToDepth, Errors) {
  expect_errors({
      {"no blocksize", [] { OpCase("SpaceToDepth", {"x"}).module(); },
       "the blocksize attribute is required"},
      {"blocksize", [] { OpCase("SpaceToDepth", {"x"}).integer("blocksize", 0).module(); },
       "blocksize must be positive, got 0"},
      {"divisible",
       [] {
         OpCase("SpaceToDepth", {"x"}).integer("blocksize", 2).run({zeros({1, 1, 3, 4})});
       },
       "space_to_depth: H (3) and W (4) must be divisible by blocksize (2)"},
      {"rank",
       [] {
         OpCase("SpaceToDepth", {"x"}).integer("blocksize", 2).run({zeros({4, 4})});
       },
       "space_to_depth: input must be 4-d [N, C, H, W], got [4, 4]"},
  });
}

}  // namespace transpose_ops
}  // namespace refold::testing
