// native::group_norm (src/kernels/native/group_norm.cpp) against reference::group_norm: NCHW of
// rank 2 to 4 and NHWC, instance (one channel per group), layer-like (one group) and in-between
// groupings, channel counts off the vector width, size-1 dims, batches, data far from 0 (the
// two-pass variance); its declines; and that Group/InstanceNormalization nodes run it.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kernels/native/cpu.h"
#include "kernels/native/group_norm.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/verbose.h"
#include "onnx/ops_tensor_helpers.h"
#include "refold/error.h"
#include "refold/threads.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/layouts.h"

namespace refold::testing {
namespace {

struct GroupCase {
  Shape sizes;
  std::int64_t groups;
};

class NativeGroupNorm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!native::cpu_has_avx2_fma()) GTEST_SKIP() << "needs AVX2 and FMA";
  }
};

TEST_F(NativeGroupNorm, MatchesTheReferenceInBothLayouts) {
  const std::vector<GroupCase> cases = {
      {{1, 5, 3, 7}, 5},  {{2, 12, 4, 5}, 3}, {{2, 12, 4, 5}, 12},   {{3, 9, 2, 11}, 1},
      {{1, 20, 1, 1}, 4}, {{1, 1, 9, 9}, 1},  {{2, 64, 14, 14}, 64}, {{1, 48, 7, 9}, 16},
      {{2, 6, 17}, 2},    {{4, 6}, 3},        {{1, 3, 2, 3, 5}, 3},
  };
  Generator gen(15);
  for (const GroupCase& c : cases) {
    const std::int64_t channels = c.sizes[1];
    // Mean ≈ 3 and spread ≈ 1: a one-pass E[x²] − μ² in float32 would lose digits here.
    const Tensor x = uniform(c.sizes, 1.0, gen);
    Tensor shifted = empty(c.sizes);
    shifted.copy_(x);
    for (std::int64_t i = 0; i < shifted.numel(); ++i) shifted.data<float>()[i] += 3.0f;
    const Tensor scale = uniform({channels}, 2.0, gen), bias = uniform({channels}, 1.0, gen);
    const Tensor expected = reference::group_norm(shifted, scale, bias, c.groups, 1e-5);
    std::vector<MemoryFormat> formats = {MemoryFormat::Contiguous};
    if (c.sizes.size() == 4) formats.push_back(MemoryFormat::ChannelsLast);
    for (const MemoryFormat format : formats) {
      SCOPED_TRACE(fmt::format("[{}] groups {} {}", fmt::join(c.sizes, ", "), c.groups,
                               memory_format_name(format)));
      const Tensor input = laid_out(shifted, format);
      std::string declined;
      const Tensor y = native::group_norm(input, scale, bias, c.groups, 1e-5, &declined);
      ASSERT_TRUE(y.defined()) << declined;
      EXPECT_EQ(y.strides(), input.strides());  // the output keeps X's layout
      EXPECT_TRUE(all_close(y, expected, Tolerance::op_f32()));
    }
  }
}

// Tensors past kernels/native/row_threads.h's threshold run on 2 threads (jobs over (n, group)
// in NCHW, over row slices in NHWC, over parts of each sample with one group in NHWC): the same
// numbers as the reference and as 1 thread.
TEST_F(NativeGroupNorm, LargeTensorsOnTwoThreads) {
  Generator gen(31);
  for (const GroupCase& c :
       std::vector<GroupCase>{{{2, 64, 32, 33}, 8}, {{1, 96, 29, 31}, 96}, {{2, 48, 31, 29}, 1}}) {
    const Tensor x = uniform(c.sizes, 2.0, gen);
    const Tensor scale = uniform({c.sizes[1]}, 1.0, gen), bias = uniform({c.sizes[1]}, 1.0, gen);
    const Tensor expected = reference::group_norm(x, scale, bias, c.groups, 1e-5);
    for (const MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast}) {
      const Tensor input = laid_out(x, format);
      Tensor by_thread_count[2];
      for (const int threads : {1, 2}) {
        const ThreadCountScope scope(threads);
        by_thread_count[threads - 1] =
            native::group_norm(input, scale, bias, c.groups, 1e-5, nullptr);
      }
      EXPECT_TRUE(all_close(by_thread_count[1], expected, Tolerance::op_f32()))
          << memory_format_name(format);
      EXPECT_TRUE(all_close(by_thread_count[1], by_thread_count[0], Tolerance::op_f32()));
    }
  }
}

TEST_F(NativeGroupNorm, DeclinesWhatItDoesNotTake) {
  Generator gen(3);
  const Tensor x = uniform({1, 4, 3, 5}, 1.0, gen);
  const Tensor scale = uniform({4}, 1.0, gen), bias = uniform({4}, 1.0, gen);
  const auto reason = [&](const Tensor& input, const Tensor& s, std::int64_t groups) {
    std::string declined;
    EXPECT_FALSE(native::group_norm(input, s, bias, groups, 1e-5, &declined).defined());
    return declined;
  };
  EXPECT_EQ(reason(with_storage_order(x, {3, 2, 1, 0}), scale, 2),
            "X is neither contiguous nor 4-d channels_last");
  EXPECT_EQ(reason(x.to(DType::BFloat16), scale, 2), "X is not float32");
  EXPECT_EQ(reason(x, scale, 3), "the channels do not split into the groups");
  EXPECT_EQ(reason(x, uniform({2}, 1.0, gen), 2),
            "scale or bias is not one contiguous float32 value per channel");
  EXPECT_THROW(native::group_norm(x, scale, bias, 3, 1e-5, nullptr), Error);
}

// The nodes dispatch to the native kernel (the profiler's implementation column) in both layouts.
TEST_F(NativeGroupNorm, NodesRunIt) {
  Generator gen(8);
  const Tensor x = uniform({2, 6, 5, 3}, 1.0, gen);
  OpCase instance("InstanceNormalization", {"x", "scale", "bias"});
  instance.constant("scale", uniform({6}, 1.0, gen)).constant("bias", uniform({6}, 1.0, gen));
  OpCase group("GroupNormalization", {"x", "scale", "bias"});
  group.opset(18).integer("num_groups", 3);
  group.constant("scale", uniform({3}, 1.0, gen)).constant("bias", uniform({3}, 1.0, gen));
  for (const auto& [name, c] :
       {std::pair{"InstanceNormalization", &instance}, std::pair{"GroupNormalization", &group}}) {
    DispatchLog log;
    const Tensor nchw = c->run({x});
    const Tensor nhwc = c->run({to_channels_last(x)});
    EXPECT_TRUE(all_close(nhwc, nchw, Tolerance::op_f32()));
    const std::string ran = std::string(name) + ": native";
    EXPECT_EQ(log.take(), (std::vector<std::string>{ran, ran}));
  }
}

}  // namespace
}  // namespace refold::testing
