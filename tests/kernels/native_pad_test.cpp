// refold's pad (kernels/native/pad.h) against reference::pad and reference::onnx_pad: ranks 1–5,
// NCHW and NHWC, pads and crops on every dim (the innermost in memory too), rows that are all
// border, a crop of everything, an output large enough to split over threads, 1 and 2 threads,
// constant, reflect, edge and wrap; the declines with their reasons; and that functional::pad
// and the ONNX Pad op run it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/pad.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"
#include "ops/pad.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/layouts.h"
#include "testing/threads.h"

namespace refold {
namespace {

using ::testing::Contains;

struct PadCase {
  Shape input;
  std::vector<std::int64_t> pads;  // reference::pad's order: last dim first
  MemoryFormat format = MemoryFormat::Contiguous;
};

std::vector<PadCase> pad_cases() {
  constexpr auto NHWC = MemoryFormat::ChannelsLast;
  return {
      {{7}, {2, 3}},
      {{3, 5}, {1, 0, 0, 2}},
      {{2, 3, 4}, {0, 0, 1, 1, 2, 0}},
      {{1, 16, 112, 112}, {0, 1, 0, 1}, NHWC},  // HGNetV2's stem Pad
      {{1, 16, 112, 112}, {0, 1, 0, 1}},
      {{2, 3, 5, 4}, {1, 2, 2, 1}, NHWC},
      {{2, 3, 5, 4}, {1, 2, 2, 1, 1, 1, 1, 0}, NHWC},  // C and N too
      {{2, 3, 5, 4}, {-1, 2, 0, -2}},                  // crops
      {{2, 3, 5, 4}, {0, 0, 0, 0, -1, -1}, NHWC},      // crop of C, the innermost in memory
      {{2, 3, 5, 4}, {-4, 1}},                         // the whole last dim cropped, then padded
      {{1, 2, 3, 4, 5}, {1, 1, 0, 2, 1, 0, 0, 0, 1, 1}},
      {{1, 1, 1, 1}, {3, 3, 3, 3}, NHWC},
  };
}

class NativePad : public ::testing::Test {
 private:
  testing::RestoreNumThreads restore_threads_;
};

TEST_F(NativePad, MatchesTheReferenceExactly) {
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const PadCase& c : pad_cases()) {
      Generator gen(5);
      const Tensor x = testing::laid_out(randn(c.input, {}, gen), c.format);
      for (float value : {0.0f, -1.5f}) {
        SCOPED_TRACE(fmt::format("[{}] {}, pads ({}), value {}, {} threads",
                                 fmt::join(c.input, ", "),
                                 c.format == MemoryFormat::ChannelsLast ? "NHWC" : "contiguous",
                                 fmt::join(c.pads, ", "), value, threads));
        std::string declined;
        const Tensor y = native::pad(x, c.pads, value, &declined);
        ASSERT_TRUE(y.defined()) << declined;
        const Tensor expected = reference::pad(x, c.pads, value);
        EXPECT_EQ(y.sizes(), expected.sizes());
        EXPECT_EQ(y.strides(), expected.strides());
        EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::exact()));
      }
    }
  }
}

// reflect, edge and wrap on the same cases (reference::onnx_pad's begin/end form), where the
// reference takes them (a dim cropped to nothing cannot be mirrored: both refuse it).
TEST_F(NativePad, EveryModeMatchesTheReferenceExactly) {
  using reference::PadMode;
  for (int threads : {1, 2}) {
    set_num_threads(threads);
    for (const PadCase& c : pad_cases()) {
      const Tensor x = testing::laid_out(randn(c.input), c.format);
      std::vector<std::int64_t> begin(c.input.size(), 0), end = begin;
      for (std::size_t k = 0; k < c.pads.size() / 2; ++k) {
        begin[c.input.size() - 1 - k] = c.pads[2 * k];
        end[c.input.size() - 1 - k] = c.pads[2 * k + 1];
      }
      for (const PadMode mode : {PadMode::Reflect, PadMode::Edge, PadMode::Wrap}) {
        SCOPED_TRACE(fmt::format(
            "[{}] {}, begin ({}), end ({}), mode {}, {} threads", fmt::join(c.input, ", "),
            c.format == MemoryFormat::ChannelsLast ? "NHWC" : "contiguous", fmt::join(begin, ", "),
            fmt::join(end, ", "), static_cast<int>(mode), threads));
        std::string declined;
        const Tensor y = native::onnx_pad(x, begin, end, mode, 0.0f, &declined);
        Tensor expected;
        try {
          expected = reference::onnx_pad(x, begin, end, mode);
        } catch (const Error&) {
          EXPECT_FALSE(y.defined()) << "the reference refuses it";
          continue;
        }
        ASSERT_TRUE(y.defined()) << declined;
        EXPECT_EQ(y.strides(), expected.strides());
        EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::exact()));
      }
    }
  }
}

TEST_F(NativePad, DeclinesWithAReason) {
  std::string why;
  const Tensor ints = zeros({2, 3}, {DType::Int64});
  EXPECT_FALSE(native::pad(ints, {1, 1}, 0.0f, &why).defined());
  EXPECT_EQ(why, "float32 only");
  const Tensor strided = zeros({4, 6}).permute({1, 0});
  EXPECT_FALSE(native::pad(strided, {1, 1}, 0.0f, &why).defined());
  EXPECT_EQ(why, "input not dense");
  // Invalid pads go to the reference, which names the problem.
  EXPECT_FALSE(native::pad(zeros({2, 3}), {1}, 0.0f, &why).defined());
  EXPECT_FALSE(native::pad(zeros({2, 3}), {-2, -2}, 0.0f, &why).defined());
  EXPECT_THROW(functional::pad(zeros({2, 3}), {-2, -2}), Error);
}

TEST_F(NativePad, TheDispatchRunsIt) {
  DispatchLog log;
  functional::pad(zeros({1, 4, 5, 5}).contiguous(MemoryFormat::ChannelsLast), {1, 1, 1, 1});
  EXPECT_THAT(log.take(), Contains("pad: native"));
  // The ONNX Pad op, in a mode other than constant (TResNet's blur pools reflect).
  ops::Pad reflect(reference::PadMode::Reflect, std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 1, 1});
  const Tensor x = randn({1, 4, 5, 5}).contiguous(MemoryFormat::ChannelsLast);
  const Tensor y = reflect.run({x})[0];
  EXPECT_THAT(log.take(), Contains("pad: native"));
  EXPECT_TRUE(testing::all_close(
      y, reference::onnx_pad(x, {0, 0, 1, 1}, {0, 0, 1, 1}, reference::PadMode::Reflect),
      testing::Tolerance::exact()));
}

}  // namespace
}  // namespace refold
