// refold's own direct conv (kernels/native/direct_conv2d.h) against the reference conv2d:
// strides 2 and 3 and mixed (2, 1), dilation at stride 1 and 2, groups (blocks of 16 and of 8), 3×3
// / 5×5 / 3×5 kernels, every kind of padding (a tap in the padding reads zeros; taps that read only
// padding left out), input channels that are not a multiple of 8, the 8-wide output-channel tail,
// pixel panels that span image rows and images, every fused activation and the residual, 1 and 2
// threads; then the declines, its weight packing in the shared cache, and the dispatch.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/native/direct_conv2d.h"
#include "kernels/native/weight_cache.h"
#include "kernels/native_conv_testing.h"
#include "refold/error.h"
#include "refold/functional.h"

namespace refold {
namespace {

using namespace testing::native_conv;
using ::testing::HasSubstr;

class NativeDirect : public NativeConvTest {};

TEST_F(NativeDirect, MatchesReferenceOverShapes) {
  const std::vector<Case> cases = {
      {.name = "RepVGG stride-2 3x3, pad 1",
       .c_in = 48,
       .c_out = 48,
       .h = 12,
       .w = 12,
       .stride = 2},
      {.name = "odd 9x7, batch 3 (panels span rows and images)",
       .n = 3,
       .c_in = 48,
       .c_out = 32,
       .h = 9,
       .w = 7,
       .stride = 2},
      {.name = "stride 3, pad 0",
       .c_in = 56,
       .c_out = 16,
       .h = 11,
       .w = 10,
       .padding = 0,
       .stride = 3},
      {.name = "stride (2, 1)", .c_in = 48, .c_out = 16, .h = 8, .w = 9, .stride = Size2d(2, 1)},
      {.name = "5x5, pad 2",
       .c_in = 48,
       .c_out = 24,
       .h = 10,
       .w = 10,
       .kh = 5,
       .kw = 5,
       .padding = 2,
       .stride = 2},
      {.name = "3x5, asymmetric pads",
       .c_in = 52,
       .c_out = 40,
       .h = 9,
       .w = 11,
       .kh = 3,
       .kw = 5,
       .padding = Padding2d::asymmetric(0, 2, 1, 1),
       .stride = 2},
      {.name = "dilation 2",
       .c_in = 48,
       .c_out = 16,
       .h = 12,
       .w = 12,
       .padding = 2,
       .stride = 2,
       .dilation = 2},
      {.name = "stride 1, dilation 12 over 16x16, batch 2 (rows cut where the live taps change)",
       .n = 2,
       .c_in = 48,
       .c_out = 24,
       .h = 16,
       .w = 16,
       .padding = 12,
       .stride = 1,
       .dilation = 12},
      {.name = "stride 1, dilation (3, 2)",
       .c_in = 48,
       .c_out = 16,
       .h = 9,
       .w = 11,
       .padding = Padding2d::asymmetric(3, 3, 2, 2),
       .stride = 1,
       .dilation = Size2d(3, 2)},
      {.name = "pad 5 over 4x4: whole rows of pixels whose every tap reads padding",
       .c_in = 48,
       .c_out = 16,
       .h = 4,
       .w = 4,
       .padding = 5,
       .stride = 2},
      {.name = "7 groups of 8 (RegNet's), stride 2, batch 2",
       .n = 2,
       .c_in = 56,
       .c_out = 56,
       .h = 11,
       .w = 10,
       .stride = 2,
       .groups = 7},
      {.name = "6 groups of 8, stride 1", .c_in = 48, .c_out = 48, .h = 7, .w = 9, .groups = 6},
      {.name = "2 groups of 24 → 40 (blocks of 8, odd inputs per group)",
       .c_in = 48,
       .c_out = 80,
       .h = 6,
       .w = 6,
       .stride = 2,
       .groups = 2},
      {.name = "2 groups of 32 → 48 (a 32-wide and a 16-wide panel each)",
       .c_in = 64,
       .c_out = 96,
       .h = 6,
       .w = 7,
       .stride = 2,
       .groups = 2},
      {.name = "'valid', 1280 outputs (80 blocks)",
       .c_in = 56,
       .c_out = 1280,
       .h = 7,
       .w = 7,
       .padding = Padding2d::valid(),
       .stride = 2},
      {.name = "no bias, pad 2 larger than the tap reach",
       .c_in = 48,
       .c_out = 8,
       .h = 5,
       .w = 5,
       .padding = 2,
       .stride = 2,
       .bias = false},
  };
  for (const Case& c : cases) expect_matches_reference(native::direct_conv2d, c);
}

TEST_F(NativeDirect, FusesEveryActivationAndTheResidual) {
  expect_every_epilogue_matches(
      native::direct_conv2d,
      {.name = "epilogue", .n = 2, .c_in = 48, .c_out = 24, .h = 9, .w = 8, .stride = 2});
}

TEST_F(NativeDirect, FusesEveryPostOpChain) {
  expect_every_chain_matches(
      native::direct_conv2d,
      {.name = "chain", .n = 2, .c_in = 48, .c_out = 24, .h = 9, .w = 8, .stride = 2});
}

TEST_F(NativeDirect, WritesOverAResidualItMay) {
  expect_overwrites_the_residual(
      native::direct_conv2d,
      {.name = "in place", .n = 2, .c_in = 48, .c_out = 24, .h = 9, .w = 8, .stride = 2});
}

TEST_F(NativeDirect, SameBitsWithOneOrTwoThreads) {
  const Case c{.name = "threads", .n = 2, .c_in = 64, .c_out = 48, .h = 21, .w = 19, .stride = 2};
  const Operands o = make_operands(c);
  set_num_threads(1);
  const Tensor one = native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, nullptr);
  set_num_threads(2);
  const Tensor two = native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, nullptr);
  EXPECT_TRUE(testing::all_close(one, two, testing::Tolerance::exact()));
}

TEST_F(NativeDirect, DeclinesWhatOtherKernelsDoBetter) {
  struct Decline {
    Case c;
    std::string reason;
  };
  // Built one by one: GCC 12 warns (maybe-uninitialized) on a braced list of nested aggregates.
  std::vector<Decline> cases;
  const auto add = [&cases](Case c, std::string reason) {
    cases.push_back({std::move(c), std::move(reason)});
  };
  add({.name = "stride 1", .c_in = 48, .c_out = 16}, "stride 1 (Winograd's or oneDNN's)");
  add({.name = "dilated over 32 input channels",
       .c_in = 32,
       .c_out = 16,
       .padding = 2,
       .dilation = 2},
      "kernel 3x3 over 32 input channels is oneDNN's");
  add({.name = "1x1 downsampling",
       .c_in = 64,
       .c_out = 64,
       .kh = 1,
       .kw = 1,
       .padding = 0,
       .stride = 2},
      "kernel 1x1 over 64 input channels is oneDNN's");
  add({.name = "stem", .c_in = 3, .c_out = 48, .stride = 2},
      "kernel 3x3 over 3 input channels is oneDNN's");
  add({.name = "32 input channels", .c_in = 32, .c_out = 64, .stride = 2},
      "kernel 3x3 over 32 input channels is oneDNN's");
  add({.name = "12 outputs", .c_in = 48, .c_out = 12, .stride = 2},
      "output channels must be a multiple of 8");
  add({.name = "4 groups of 12", .c_in = 48, .c_out = 48, .stride = 2, .groups = 4},
      "output channels per group must be a multiple of 8");
  add({.name = "4 groups of 16", .c_in = 64, .c_out = 64, .groups = 4},
      "4 groups of 16 → 16 channels are oneDNN's");
  add({.name = "depthwise, multiplier 8", .c_in = 48, .c_out = 384, .stride = 2, .groups = 48},
      "48 groups of 1 → 8 channels are oneDNN's");
  add({.name = "3 groups of 8 over 24 input channels", .c_in = 24, .c_out = 24, .groups = 3},
      "kernel 3x3 over 24 input channels is oneDNN's");
  for (const Decline& d : cases) {
    const Operands o = make_operands(d.c);
    std::string declined;
    EXPECT_FALSE(
        native::direct_conv2d(o.input, o.weight, o.bias, d.c.options(), {}, &declined).defined())
        << d.c.name;
    EXPECT_EQ(declined, d.reason) << d.c.name;
    EXPECT_THAT(
        [&] { (void)native::direct_conv2d(o.input, o.weight, o.bias, d.c.options(), {}, nullptr); },
        ::testing::ThrowsMessage<Error>(HasSubstr("native direct conv declined: " + d.reason)));
  }
  // The rules shared with Winograd (conv_rules.h) apply too.
  const Case c{.name = "shared rules", .c_in = 48, .c_out = 16, .stride = 2};
  const Operands o = make_operands(c);
  std::string declined;
  EXPECT_FALSE(
      native::direct_conv2d(o.input.contiguous(), o.weight, o.bias, c.options(), {}, &declined)
          .defined());
  EXPECT_EQ(declined, "input not channels_last");
  set_conv_algorithm(ConvAlgorithm::Direct);
  EXPECT_FALSE(
      native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, &declined).defined());
  EXPECT_EQ(declined, "conv algorithm is 'direct'");
}

// Where oneDNN has its AVX-512 convs (full or half rate), they are faster at every measured
// shape, so the kernel declines; capped at AVX2 it runs; the Native algorithm still runs it.
TEST_F(NativeDirect, DeclinesWhereOneDnnHasAvx512Convs) {
  if (!native::cpu_has_avx512()) GTEST_SKIP() << "this CPU has no AVX-512";
  const Case c{.name = "RepVGG stride 2", .c_in = 48, .c_out = 48, .h = 12, .w = 12, .stride = 2};
  const Operands o = make_operands(c);
  std::string declined;
  EXPECT_TRUE(
      native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, &declined).defined())
      << declined;
  const ScopedVectorIsa avx512(native::VectorIsa::Avx512);
  EXPECT_FALSE(
      native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, &declined).defined());
  EXPECT_EQ(declined, "oneDNN's AVX-512 conv is faster on this CPU");
  const ScopedConvAlgorithm native(ConvAlgorithm::Native);
  EXPECT_TRUE(
      native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, &declined).defined());
}

// The Native algorithm runs it where the rule leaves the conv to oneDNN (a 1×1 stride-2 conv over
// 16 input channels), with the conv's result.
TEST_F(NativeDirect, TheNativeAlgorithmRunsItBeyondItsRule) {
  const Case c{.name = "1x1 stride 2 over 16 channels",
               .c_in = 16,
               .c_out = 24,
               .h = 9,
               .w = 9,
               .kh = 1,
               .kw = 1,
               .padding = 0,
               .stride = 2};
  const Operands o = make_operands(c);
  std::string declined;
  EXPECT_FALSE(
      native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, &declined).defined());
  EXPECT_EQ(declined, "kernel 1x1 over 16 input channels is oneDNN's");
  expect_matches_reference(native::direct_conv2d, c);
}

TEST_F(NativeDirect, PacksAWeightOnceAndAgainAfterItChanges) {
  native::clear_cache();
  const Case c{.name = "cache", .c_in = 48, .c_out = 24, .stride = 2};
  Operands o = make_operands(c);
  (void)native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, nullptr);
  (void)native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, nullptr);
  EXPECT_EQ(native::cache_stats().packs, 1u);
  EXPECT_EQ(native::cache_stats().hits, 1u);
  EXPECT_EQ(native::cache_stats().bytes, 24u * 48u * 9u * sizeof(float));  // same size, reordered
  scale(o.weight, -1.0f);
  const Tensor y = native::direct_conv2d(o.input, o.weight, o.bias, c.options(), {}, nullptr);
  EXPECT_EQ(native::cache_stats().packs, 2u);
  EXPECT_TRUE(testing::all_close(y, reference::conv2d(o.input, o.weight, o.bias, c.options()),
                                 testing::Tolerance::op_f32()));
  native::clear_cache();
}

// A dilated conv on a small map reads padding at most of its taps: DeepLabV3's ASPP at rate 12
// over 16×16 reads the input at 25 % of its (pixel, tap) pairs. The kernel's panels then hold
// only the taps their pixels read — 144 panel × tap products, not ⌈256 / 6⌉ · 9 = 387 — while
// an ordinary strided conv keeps its pixels in order, six at a time, with every tap.
TEST_F(NativeDirect, LeavesOutTheTapsThatReadOnlyPadding) {
  const Case aspp{.name = "rate 12",
                  .c_in = 48,
                  .c_out = 16,
                  .h = 16,
                  .w = 16,
                  .padding = 12,
                  .stride = 1,
                  .dilation = 12};
  const Operands a = make_operands(aspp);
  EXPECT_EQ(native::detail::direct_conv2d_tap_products(
                validate_conv2d(a.input, a.weight, a.bias, aspp.options(), {})),
            144);
  const Case strided{.name = "stride 2", .c_in = 48, .c_out = 16, .h = 56, .w = 56, .stride = 2};
  const Operands s = make_operands(strided);
  EXPECT_EQ(native::detail::direct_conv2d_tap_products(
                validate_conv2d(s.input, s.weight, s.bias, strided.options(), {})),
            (28 * 28 + 5) / 6 * 9);
}

TEST_F(NativeDirect, FunctionalConvRunsItForStridedConvs) {
  native::clear_cache();
  const Case c{.name = "dispatch", .c_in = 64, .c_out = 32, .h = 10, .w = 10, .stride = 2};
  const Operands o = make_operands(c);
  const Tensor y = functional::conv2d(o.input, o.weight, o.bias, c.options());
  EXPECT_EQ(native::cache_stats().packs, 1u);
  set_conv_algorithm(ConvAlgorithm::Direct);  // oneDNN only
  const Tensor onednn = functional::conv2d(o.input, o.weight, o.bias, c.options());
  EXPECT_EQ(native::cache_stats().packs + native::cache_stats().hits, 1u);
  EXPECT_TRUE(testing::all_close(y, onednn, testing::Tolerance::op_f32()));
  native::clear_cache();
}

// Dilated stride-1 convs and RegNet's groups of 8 are its too, where oneDNN has no AVX-512
// convs.
TEST_F(NativeDirect, FunctionalConvRunsItForDilatedAndGroupedConvs) {
  if (native::onednn_has_avx512_convs()) GTEST_SKIP() << "oneDNN's AVX-512 convs run them here";
  for (const Case& c :
       {Case{.name = "dilated",
       .c_in = 64,
       .c_out = 32,
       .h = 12,
       .w = 12,
       .padding = 4,
       .dilation = 4},
        Case{.name = "groups of 8", .c_in = 64, .c_out = 64, .h = 12, .w = 12, .groups = 8}}) {
    native::clear_cache();
    const Operands o = make_operands(c);
    const Tensor y = functional::conv2d(o.input, o.weight, o.bias, c.options());
    EXPECT_EQ(native::cache_stats().packs, 1u) << c.name;
    EXPECT_TRUE(testing::all_close(y, reference::conv2d(o.input, o.weight, o.bias, c.options()),
                                   testing::Tolerance::op_f32()))
        << c.name;
  }
  native::clear_cache();
}

}  // namespace
}  // namespace refold
