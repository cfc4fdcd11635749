// native::channel_binary (an NHWC tensor times or plus one value per channel) against the
// reference: both operand orders, [1, C, 1, 1] and [C, 1, 1] operands, channel counts with and
// without a vector tail, 1 and 2 threads; what it declines; functional::mul running it.
#include "kernels/native/channel_binary.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/verbose.h"
#include "refold/functional.h"
#include "refold/reference.h"
#include "refold/threads.h"
#include "testing/compare.h"
#include "testing/threads.h"

namespace refold {
namespace {

using ::testing::HasSubstr;
constexpr auto NHWC = MemoryFormat::ChannelsLast;

class NativeChannelBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }

 private:
  testing::RestoreNumThreads restore_threads_;
};

TEST_F(NativeChannelBinary, MatchesTheReferenceExactly) {
  // 13 and 37 channels leave a tail of every vector width; 96 × 48² runs on two threads.
  for (const Shape& sizes : {Shape{2, 13, 5, 3}, Shape{1, 37, 4, 4}, Shape{1, 96, 48, 48}}) {
    Generator gen(4);
    const Tensor x = randn(sizes, {}, gen).contiguous(NHWC);
    const std::int64_t c = sizes[1];
    for (const Tensor& v : {randn({1, c, 1, 1}, {}, gen), randn({c, 1, 1}, {}, gen)}) {
      for (const native::ChannelOp op : {native::ChannelOp::Mul, native::ChannelOp::Add}) {
        const bool mul = op == native::ChannelOp::Mul;
        const Tensor expected = mul ? reference::mul(x, v) : reference::add(x, v);
        for (int threads : {1, 2}) {
          set_num_threads(threads);
          SCOPED_TRACE(fmt::format("{} {} v {} {} threads", x.description(), mul ? "mul" : "add",
                                   v.description(), threads));
          for (const bool swapped : {false, true}) {
            std::string declined;
            const Tensor y = swapped ? native::channel_binary(op, v, x, &declined)
                                     : native::channel_binary(op, x, v, &declined);
            ASSERT_TRUE(y.defined()) << declined;
            EXPECT_TRUE(y.is_contiguous(NHWC));
            EXPECT_TRUE(testing::all_close(y, expected, testing::Tolerance::exact()));
          }
        }
      }
    }
  }
}

TEST_F(NativeChannelBinary, DeclinesWhatItDoesNotTake) {
  const auto reason = [](const Tensor& a, const Tensor& b) {
    std::string why;
    EXPECT_FALSE(native::channel_binary(native::ChannelOp::Mul, a, b, &why).defined());
    return why;
  };
  const Tensor x = randn({1, 8, 3, 3}).contiguous(NHWC);
  EXPECT_EQ(reason(x.contiguous(), randn({1, 8, 1, 1})), "not NHWC");
  EXPECT_EQ(reason(x, randn({1, 8, 3, 3}).contiguous(NHWC)), "not one value per channel");
  EXPECT_EQ(reason(x, randn({1, 1, 3, 3})), "not one value per channel");
  EXPECT_THAT(reason(x.to(DType::BFloat16), randn({1, 8, 1, 1}).to(DType::BFloat16)),
              HasSubstr("float32"));
}

// A squeeze-and-excitation x · s through functional::mul runs here.
TEST_F(NativeChannelBinary, FunctionalMulRunsIt) {
  DispatchLog log;
  (void)functional::mul(randn({1, 16, 7, 7}).contiguous(NHWC), rand({1, 16, 1, 1}));
  EXPECT_EQ(log.take(), std::vector<std::string>{"mul: native"});
}

}  // namespace
}  // namespace refold
