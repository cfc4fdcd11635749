// native::grid_sample against reference::grid_sample: nearest and linear, every padding mode,
// align_corners on and off, grids reaching past the borders, non-square planes, few channels and
// channel vectors, both ISAs, 1 and 2 threads;
// a NaN or infinite coordinate; what it declines; and the GridSample op running it.
#include "kernels/native/grid_sample.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native_conv_testing.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"
#include "refold/threads.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using reference::GridSampleMode;
using reference::GridSamplePadding;
using reference::GridSampleParams;

// 5 channels run plane by plane; 32 (deformable attention's head) as vectors of channels, over
// more points than one job's 256, in both ISAs' forms.
TEST(NativeGridSample, MatchesTheReference) {
  testing::RestoreNumThreads restore;
  Generator gen(9);
  struct Case {
    Shape x, grid;
  };
  for (const Case& c : {Case{{2, 5, 7, 9}, {2, 6, 11, 2}}, Case{{3, 32, 10, 12}, {3, 30, 10, 2}}}) {
    const Tensor x = testing::uniform(c.x, 1.0, gen);
    const Tensor grid = testing::uniform(c.grid, 1.3, gen);  // past ±1: the padding
    for (const GridSampleMode mode : {GridSampleMode::Nearest, GridSampleMode::Linear})
      for (const GridSamplePadding padding :
           {GridSamplePadding::Zeros, GridSamplePadding::Border, GridSamplePadding::Reflection})
        for (const bool align : {false, true})
          for (const native::VectorIsa isa : testing::native_conv::runnable_isas())
            for (const int threads : {1, 2}) {
              set_num_threads(threads);
              const testing::native_conv::ScopedVectorIsa capped(isa);
              const GridSampleParams p{mode, padding, align};
              SCOPED_TRACE(fmt::format("X [{}] mode {} padding {} align {} ISA {} threads {}",
                                       fmt::join(c.x, ", "), static_cast<int>(mode),
                                       static_cast<int>(padding), align, static_cast<int>(isa),
                                       threads));
              std::string declined;
              const Tensor y = native::grid_sample(x, grid, p, &declined);
              ASSERT_TRUE(y.defined()) << declined;
              EXPECT_TRUE(y.is_contiguous());
              EXPECT_TRUE(testing::all_close(y, reference::grid_sample(x, grid, p),
                                             testing::Tolerance::op_f32()));
            }
  }
}

// NaN gives NaN, in both; ±∞ reads the padding (zeros) or the edge (border), not an integer
// overflow.
TEST(NativeGridSample, NonFiniteCoordinates) {
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor x = from_values(std::vector<float>{1, 2, 3, 4}, {1, 1, 2, 2});
  const Tensor grid = from_values(
      std::vector<float>{std::nanf(""), 0, inf, 0, -inf, -inf, 0.5f, 1e30f}, {1, 1, 4, 2});
  for (const GridSamplePadding padding : {GridSamplePadding::Zeros, GridSamplePadding::Border}) {
    const GridSampleParams p{GridSampleMode::Linear, padding, false};
    const Tensor want = reference::grid_sample(x, grid, p);
    const Tensor got = native::grid_sample(x, grid, p, nullptr);
    const std::vector<float> w = want.to_vector(), g = got.to_vector();
    EXPECT_TRUE(std::isnan(w[0]) && std::isnan(g[0]));
    for (std::size_t i = 1; i < 4; ++i) {
      EXPECT_TRUE(std::isfinite(w[i])) << i;
      EXPECT_EQ(g[i], w[i]) << i;
    }
    // (∞, 0) reads zeros, or the right edge's mean; (−∞, −∞) the padding or x[0, 0].
    EXPECT_EQ(w[1], padding == GridSamplePadding::Zeros ? 0.0f : 3.0f);
    EXPECT_EQ(w[2], padding == GridSamplePadding::Zeros ? 0.0f : 1.0f);
  }
}

TEST(NativeGridSample, DeclinesWithReasons) {
  const auto reason = [](const Tensor& x, const Tensor& grid, GridSampleMode mode) {
    std::string why;
    EXPECT_FALSE(
        native::grid_sample(x, grid, {mode, GridSamplePadding::Zeros, false}, &why).defined());
    return why;
  };
  const Tensor grid = zeros({1, 3, 3, 2});
  EXPECT_EQ(reason(zeros({1, 2, 4, 4}), grid, GridSampleMode::Cubic), "cubic mode");
  EXPECT_EQ(reason(zeros({1, 2, 4, 4}).to(DType::BFloat16), grid, GridSampleMode::Linear),
            "not float32 X and grid");
  EXPECT_EQ(reason(zeros({1, 2, 4, 4, 4}), zeros({1, 3, 3, 3, 3}), GridSampleMode::Linear),
            "not X [N, C, H, W] with grid [N, Ho, Wo, 2]");
  EXPECT_EQ(reason(zeros({1, 4, 4, 2}).permute({0, 3, 1, 2}), grid, GridSampleMode::Linear),
            "X's strides [32, 1, 8, 2] are not dense NCHW");
}

}  // namespace
}  // namespace refold
