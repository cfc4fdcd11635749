// The conv micro-kernel (kernels/native/micro_kernel.h) in both its forms, AVX2 and AVX-512,
// against a plain sum in double: every row count 1–6, every width (8, 16, 24, 32: one or two
// packed blocks, the second 8 or 16 wide), one and several taps, rows that are arbitrary
// pointers, a subset of B's taps (Panel::tap_ids), and the fused epilogue (bias, activation). Both
// forms do each output's FMAs in the same order, so they agree bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native/micro_kernel.h"

namespace refold {
namespace {

using native::kBlockWidth;
using native::kPanelRows;

struct Problem {
  std::int64_t rows, width, taps, depth;
};

// A's rows (each tap's rows apart in one buffer, so pointers are arbitrary), B packed as the
// kernels pack it, and C = A·B in double.
struct Operands {
  std::vector<float> a, b;
  std::vector<const float*> pointers;  // taps × kPanelRows
  std::vector<double> expected;        // rows × width
};

Operands make_operands(const Problem& p, std::uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Operands o;
  const std::int64_t row_stride = p.depth + 3;  // rows not packed back to back
  o.a.resize(static_cast<std::size_t>(p.taps * kPanelRows * row_stride));
  for (float& v : o.a) v = dist(gen);
  o.b.resize(static_cast<std::size_t>(p.taps * p.depth * p.width));
  for (float& v : o.b) v = dist(gen);
  for (std::int64_t t = 0; t < p.taps; ++t)
    for (std::int64_t r = 0; r < kPanelRows; ++r)
      o.pointers.push_back(o.a.data() + ((kPanelRows - 1 - r) * p.taps + t) * row_stride);
  // B[t][k][col]: the block of col, [taps][depth][block width], blocks back to back.
  const auto b_at = [&](std::int64_t t, std::int64_t k, std::int64_t col) {
    const std::int64_t block = col / kBlockWidth, first = block * kBlockWidth;
    const std::int64_t block_width = std::min(kBlockWidth, p.width - first);
    return o.b[static_cast<std::size_t>(first * p.taps * p.depth + (t * p.depth + k) * block_width +
                                        col - first)];
  };
  o.expected.assign(static_cast<std::size_t>(p.rows * p.width), 0.0);
  for (std::int64_t r = 0; r < p.rows; ++r)
    for (std::int64_t col = 0; col < p.width; ++col)
      for (std::int64_t t = 0; t < p.taps; ++t)
        for (std::int64_t k = 0; k < p.depth; ++k)
          o.expected[static_cast<std::size_t>(r * p.width + col)] +=
              static_cast<double>(o.pointers[static_cast<std::size_t>(t * kPanelRows + r)][k]) *
              b_at(t, k, col);
  return o;
}

// C from one form, in a buffer with a row stride wider than the panel and sentinels around it.
std::vector<float> multiply(void (*form)(const native::Panel&), const Problem& p, const Operands& o,
                            const native::Epilogue* epilogue,
                            const std::vector<std::int64_t>* tap_ids = nullptr) {
  const std::int64_t ldc = p.width + 5;
  std::vector<float> c(static_cast<std::size_t>(p.rows * ldc), -7.0f);
  native::Panel panel;
  panel.rows = p.rows;
  panel.a = o.pointers.data();
  panel.taps = p.taps;
  panel.depth = p.depth;
  panel.b = o.b.data();
  panel.width = p.width;
  panel.c = c.data();
  panel.ldc = ldc;
  panel.epilogue = epilogue;
  std::vector<const float*> pointers;  // the groups of the taps in tap_ids, in their order
  if (tap_ids != nullptr) {
    for (std::int64_t t : *tap_ids)
      pointers.insert(pointers.end(), o.pointers.begin() + t * kPanelRows,
                      o.pointers.begin() + (t + 1) * kPanelRows);
    panel.a = pointers.data();
    panel.taps = static_cast<std::int64_t>(tap_ids->size());
    panel.tap_ids = tap_ids->data();
    panel.block_taps = p.taps;
  }
  form(panel);
  for (std::int64_t r = 0; r < p.rows; ++r)
    for (std::int64_t col = p.width; col < ldc; ++col)
      EXPECT_EQ(c[static_cast<std::size_t>(r * ldc + col)], -7.0f) << "wrote past the panel";
  return c;
}

class MicroKernel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "this CPU has no AVX2/FMA";
  }
};

TEST_F(MicroKernel, BothFormsComputeThePanelProduct) {
  const bool avx512 = native::cpu_has_avx512();
  std::uint32_t seed = 1;
  for (std::int64_t rows = 1; rows <= kPanelRows; ++rows) {
    for (std::int64_t width : {8, 16, 24, 32}) {
      for (const auto& [taps, depth] : {std::pair<std::int64_t, std::int64_t>{1, 17}, {9, 5}}) {
        const Problem p{rows, width, taps, depth};
        SCOPED_TRACE(::testing::Message() << rows << " rows, width " << width << ", " << taps
                                          << " taps of depth " << depth);
        const Operands o = make_operands(p, seed++);
        const std::vector<float> c2 = multiply(native::detail::multiply_panel_avx2, p, o, nullptr);
        const std::int64_t ldc = width + 5;
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t col = 0; col < width; ++col)
            EXPECT_NEAR(c2[static_cast<std::size_t>(r * ldc + col)],
                        o.expected[static_cast<std::size_t>(r * width + col)], 1e-5)
                << "row " << r << ", column " << col;
        if (!avx512) continue;
        EXPECT_EQ(multiply(native::detail::multiply_panel_avx512, p, o, nullptr), c2);
      }
    }
  }
}

// The direct conv leaves out a panel's taps that read only padding: given tap_ids, the kernel
// sums only those of B's taps, in every width (the second block's offset is B's tap count, not
// the panel's).
TEST_F(MicroKernel, BothFormsSumOnlyTheTapsGiven) {
  for (std::int64_t width : {8, 16, 24, 32}) {
    for (const std::vector<std::int64_t>& tap_ids :
         {std::vector<std::int64_t>{1, 4, 8}, std::vector<std::int64_t>{}}) {
      const Problem p{6, width, 9, 5};
      SCOPED_TRACE(::testing::Message() << "width " << width << ", " << tap_ids.size() << " taps");
      const Operands all = make_operands(p, 200 + static_cast<std::uint32_t>(width));
      // The expected sums of the listed taps alone: those of one-tap problems over the same data.
      std::vector<double> expected(static_cast<std::size_t>(p.rows * width), 0.0);
      for (std::int64_t t : tap_ids) {
        for (std::int64_t r = 0; r < p.rows; ++r) {
          for (std::int64_t col = 0; col < width; ++col) {
            const std::int64_t first = col / kBlockWidth * kBlockWidth;
            const std::int64_t block_width = std::min(kBlockWidth, width - first);
            for (std::int64_t k = 0; k < p.depth; ++k)
              expected[static_cast<std::size_t>(r * width + col)] +=
                  static_cast<double>(
                      all.pointers[static_cast<std::size_t>(t * kPanelRows + r)][k]) *
                  all.b[static_cast<std::size_t>(first * p.taps * p.depth +
                                                 (t * p.depth + k) * block_width + col - first)];
          }
        }
      }
      const std::vector<float> c2 =
          multiply(native::detail::multiply_panel_avx2, p, all, nullptr, &tap_ids);
      const std::int64_t ldc = width + 5;
      for (std::int64_t r = 0; r < p.rows; ++r)
        for (std::int64_t col = 0; col < width; ++col)
          EXPECT_NEAR(c2[static_cast<std::size_t>(r * ldc + col)],
                      expected[static_cast<std::size_t>(r * width + col)], 1e-5)
              << "row " << r << ", column " << col;
      if (native::cpu_has_avx512()) {
        EXPECT_EQ(multiply(native::detail::multiply_panel_avx512, p, all, nullptr, &tap_ids), c2);
      }
    }
  }
}

// The epilogue at the store: bias per output channel, then ReLU. The AVX-512 form applies it 8
// lanes at a time, from the right channel for each half of each vector.
TEST_F(MicroKernel, BothFormsApplyTheEpilogueToTheRightChannels) {
  for (std::int64_t width : {8, 16, 24, 32}) {
    const Problem p{5, width, 3, 7};
    SCOPED_TRACE(::testing::Message() << "width " << width);
    const Operands o = make_operands(p, 100 + static_cast<std::uint32_t>(width));
    std::vector<float> bias(static_cast<std::size_t>(width));
    for (std::int64_t col = 0; col < width; ++col)
      bias[static_cast<std::size_t>(col)] = 0.25f * static_cast<float>(col % 7) - 0.75f;
    native::Epilogue epilogue;
    epilogue.bias = bias.data();
    epilogue.activation = Activation::ReLU;
    const std::vector<float> c2 = multiply(native::detail::multiply_panel_avx2, p, o, &epilogue);
    const std::int64_t ldc = width + 5;
    for (std::int64_t r = 0; r < p.rows; ++r)
      for (std::int64_t col = 0; col < width; ++col)
        EXPECT_NEAR(c2[static_cast<std::size_t>(r * ldc + col)],
                    std::max(0.0, o.expected[static_cast<std::size_t>(r * width + col)] +
                                      bias[static_cast<std::size_t>(col)]),
                    1e-5)
            << "row " << r << ", column " << col;
    if (native::cpu_has_avx512()) {
      EXPECT_EQ(multiply(native::detail::multiply_panel_avx512, p, o, &epilogue), c2);
    }
  }
}

}  // namespace
}  // namespace refold
