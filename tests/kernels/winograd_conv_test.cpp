// refold's Winograd conv (kernels/native), with each of its tiles F(2×2, 3×3) and F(4×4, 3×3),
// against the reference conv2d: shapes that exercise every tile edge (output sizes of every
// remainder modulo 2 and 4, asymmetric, 'same', 0 and 2 padding), the 8-wide output-channel
// tail, several chunks of tiles, batch > 1, wide layers (the larger tile's rounding), every
// fused activation and the residual sum, 1 and 2 threads; then the tile rule, the declines, the
// argument errors, the transformed-weight cache, determinism across thread counts, the dispatch
// and the conv-algorithm setting.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/native/weight_cache.h"
#include "kernels/native/winograd_conv2d.h"
#include "kernels/native_conv_testing.h"
#include "kernels/verbose.h"
#include "refold/error.h"
#include "refold/functional.h"
#include "refold/memory.h"

namespace refold {
namespace {

using ::testing::HasSubstr;
using testing::Tolerance;
using namespace testing::native_conv;

std::vector<Case> shape_cases() {
  std::vector<Case> cases;
  cases.push_back({.name = "even 8x8, pad 1"});
  cases.push_back({.name = "odd 7x5 (partial tiles), batch 3", .n = 3, .h = 7, .w = 5});
  cases.push_back({.name = "6x9 (remainders 2 and 1 of 4)", .h = 6, .w = 9});
  cases.push_back({.name = "pad 0", .h = 9, .w = 6, .padding = 0});
  cases.push_back({.name = "pad 2", .h = 5, .w = 5, .padding = 2});
  cases.push_back(
      {.name = "asymmetric pads", .h = 6, .w = 7, .padding = Padding2d::asymmetric(0, 2, 1, 0)});
  cases.push_back({.name = "'same'", .h = 6, .w = 6, .padding = Padding2d::same()});
  cases.push_back({.name = "1x1 input", .h = 1, .w = 1});
  cases.push_back({.name = "8-wide channel tail (40 = 16 + 16 + 8 out)", .c_in = 48, .c_out = 40});
  cases.push_back({.name = "no bias", .c_in = 40, .c_out = 48, .bias = false});
  // 64 channels at 66×66: 1089 tiles × 16 positions × 128 floats = 8.9 MB, several chunks.
  cases.push_back({.name = "several chunks", .c_in = 64, .c_out = 64, .h = 66, .w = 66});
  cases.push_back({.name = "RepVGG-A0 stage 3 layer", .c_in = 192, .c_out = 192, .h = 14, .w = 14});
  // The widest 3×3 layers of common nets (ResNet's last stage): the sums over 512 channels are
  // where the 4×4 tile's larger transform coefficients show up in the rounding.
  cases.push_back({.name = "512 -> 64 at 7x7", .c_in = 512, .c_out = 64, .h = 7, .w = 7});
  return cases;
}

// The kernel with a fixed tile, in the signature the shared checks take.
template <native::WinogradTile Tile>
Tensor winograd_with(const Conv2dCall& call, std::string* declined) {
  return native::winograd_conv2d(call, Tile, declined);
}

struct TileCase {
  const char* name;
  Kernel kernel;
};
const TileCase kTiles[] = {{"F(2x2,3x3)", winograd_with<native::WinogradTile::F2x2>},
                           {"F(4x4,3x3)", winograd_with<native::WinogradTile::F4x4>}};

class NativeWinograd : public NativeConvTest {};

TEST_F(NativeWinograd, MatchesReferenceOverShapes) {
  for (const TileCase& tile : kTiles) {
    SCOPED_TRACE(tile.name);
    for (const Case& c : shape_cases()) expect_matches_reference(tile.kernel, c);
  }
}

// The 4×4 tile's largest error against the reference, over sums of 256 channels of unit-scale
// data: 6.4× the 2×2 tile's with its interpolation points 0, ±1, ½, −2; the usual points 0, ±1,
// ±2 gave 15.4× (the channel sums are rounded at the transformed positions' scale, which their
// larger coefficients raise; winograd_tiles.h).
TEST_F(NativeWinograd, TheLargerTileRoundsWithinTenTimesTheSmaller) {
  const Case c{.name = "256 -> 64 at 16x16", .c_in = 256, .c_out = 64, .h = 16, .w = 16};
  const Operands o = make_operands(c);
  const Tensor expected = reference::conv2d(o.input, o.weight, o.bias, c.options());
  const Conv2dOptions options = c.options();
  const PostOps none;  // the call refers to both: they outlive it
  const auto error = [&](native::WinogradTile tile) {
    const Conv2dCall call = validate_conv2d(o.input, o.weight, o.bias, options, none);
    std::string declined;
    const Tensor out = native::winograd_conv2d(call, tile, &declined);
    EXPECT_TRUE(out.defined()) << declined;
    return testing::max_abs_diff(out, expected);
  };
  const double small = error(native::WinogradTile::F2x2), large = error(native::WinogradTile::F4x4);
  std::printf("F(2x2) %.3g, F(4x4) %.3g: %.2fx\n", small, large, large / small);
  EXPECT_LE(large, 10 * small) << "F(2x2) " << small << ", F(4x4) " << large;
}

TEST_F(NativeWinograd, FusesEveryActivationAndTheResidual) {
  for (const TileCase& tile : kTiles) {
    SCOPED_TRACE(tile.name);
    expect_every_epilogue_matches(
        tile.kernel, {.name = "epilogue", .n = 2, .c_in = 48, .c_out = 40, .h = 7, .w = 6});
  }
}

TEST_F(NativeWinograd, FusesEveryPostOpChain) {
  for (const TileCase& tile : kTiles) {
    SCOPED_TRACE(tile.name);
    expect_every_chain_matches(tile.kernel,
                               {.name = "chain", .n = 2, .c_in = 48, .c_out = 40, .h = 7, .w = 6});
  }
}

TEST_F(NativeWinograd, WritesOverAResidualItMay) {
  for (const TileCase& tile : kTiles) {
    SCOPED_TRACE(tile.name);
    expect_overwrites_the_residual(
        tile.kernel, {.name = "in place", .n = 2, .c_in = 48, .c_out = 40, .h = 7, .w = 6});
  }
}

// The tile of lower cost α²·(tiles + 16): at batch 1, 16·(49 + 16) = 1040 vs 36·(16 + 16) = 1152
// at 14×14 keeps 2×2 tiles; 28×28 (3392 vs 2340) and larger take 4×4, and so does 14×14 from
// batch 2 (the weight read shared by more tiles).
TEST(WinogradTile, TakesTheTileOfLowerCost) {
  using native::WinogradTile;
  EXPECT_EQ(native::winograd_tile(1, 1, 1), WinogradTile::F2x2);
  EXPECT_EQ(native::winograd_tile(1, 7, 7), WinogradTile::F2x2);
  EXPECT_EQ(native::winograd_tile(1, 14, 14), WinogradTile::F2x2);
  EXPECT_EQ(native::winograd_tile(2, 14, 14), WinogradTile::F4x4);
  EXPECT_EQ(native::winograd_tile(1, 20, 20), WinogradTile::F4x4);
  EXPECT_EQ(native::winograd_tile(1, 28, 28), WinogradTile::F4x4);
  EXPECT_EQ(native::winograd_tile(1, 56, 2), WinogradTile::F2x2);
  EXPECT_EQ(native::winograd_tile(8, 56, 56), WinogradTile::F4x4);
}

// 4×4 tiles pay off from fewer channels (C_in·C_out / (C_in + C_out) ≥ 12) than 2×2 tiles (20).
TEST_F(NativeWinograd, TheLargerTileTakesFewerChannels) {
  const Case c{.name = "24 -> 24", .c_in = 24, .c_out = 24, .h = 12, .w = 12};
  const Operands o = make_operands(c);
  // The call refers to its arguments: each must outlive it.
  const Conv2dOptions options = c.options();
  const PostOps post;
  const Conv2dCall call = validate_conv2d(o.input, o.weight, o.bias, options, post);
  std::string declined;
  EXPECT_FALSE(native::winograd_conv2d(call, native::WinogradTile::F2x2, &declined).defined());
  EXPECT_EQ(declined, "too few channels to pay off (24→24)");
  expect_matches_reference(winograd_with<native::WinogradTile::F4x4>, c);
}

// The channel rule of each ISA (winograd_conv2d.cpp) on the shapes it was measured on, batch 1,
// 'same' padding: with AVX2 it is ρ = C_in·C_out / (C_in + C_out) alone (≥ 20 for 2×2 tiles,
// 12 for 4×4); with full-rate AVX-512 the bar is higher and few tiles count against it.
TEST(WinogradChannelRule, FollowsEachIsasMeasurements) {
  using native::VectorIsa;
  using native::WinogradTile;
  const auto pays = [](WinogradTile tile, VectorIsa isa, std::int64_t c_in, std::int64_t c_out,
                       std::int64_t size) {
    reference::detail::Conv2dGeometry g{};
    g.batch = 1, g.in_channels = c_in, g.out_channels = c_out, g.kh = g.kw = 3, g.groups = 1;
    g.in_h = g.in_w = g.out_h = g.out_w = size;
    return native::winograd_has_enough_channels(tile, g, isa);
  };
  // AVX2: the size does not matter.
  EXPECT_TRUE(pays(WinogradTile::F4x4, VectorIsa::Avx2, 24, 24, 56));   // ρ 12
  EXPECT_FALSE(pays(WinogradTile::F4x4, VectorIsa::Avx2, 16, 16, 56));  // ρ 8
  EXPECT_TRUE(pays(WinogradTile::F4x4, VectorIsa::Avx2, 64, 64, 14));
  EXPECT_TRUE(pays(WinogradTile::F2x2, VectorIsa::Avx2, 40, 40, 28));   // ρ 20
  EXPECT_FALSE(pays(WinogradTile::F2x2, VectorIsa::Avx2, 32, 32, 80));  // ρ 16
  // AVX-512: ρ·T / (T + 16) ≥ 24 for 4×4 tiles, 40 for 2×2, and T ≥ 32.
  EXPECT_TRUE(pays(WinogradTile::F4x4, VectorIsa::Avx512, 96, 96, 28));     // 48·49/65 = 36
  EXPECT_FALSE(pays(WinogradTile::F4x4, VectorIsa::Avx512, 192, 192, 14));  // T 16
  EXPECT_TRUE(pays(WinogradTile::F2x2, VectorIsa::Avx512, 192, 192, 14));   // 96·49/65 = 72
  EXPECT_FALSE(pays(WinogradTile::F2x2, VectorIsa::Avx512, 512, 512, 7));   // T 16
  EXPECT_TRUE(pays(WinogradTile::F4x4, VectorIsa::Avx512, 64, 64, 40));     // 32·100/116 = 28
  EXPECT_FALSE(pays(WinogradTile::F4x4, VectorIsa::Avx512, 64, 64, 14));    // 32·16/32 = 16
  EXPECT_FALSE(pays(WinogradTile::F4x4, VectorIsa::Avx512, 48, 48, 28));    // 24·49/65 = 18
  EXPECT_FALSE(pays(WinogradTile::F4x4, VectorIsa::Avx512, 32, 32, 80));    // 16·400/416 = 15
  EXPECT_TRUE(pays(WinogradTile::F2x2, VectorIsa::Avx512, 96, 96, 28));     // 48·196/212 = 44
  EXPECT_FALSE(pays(WinogradTile::F2x2, VectorIsa::Avx512, 64, 64, 40));    // 32·400/416 = 31
}

// Where vector_isa() is AVX-512, winograd_conv2d applies AVX-512's rule: 64→64 at 14², which
// AVX2's rule takes, is declined.
TEST_F(NativeWinograd, AppliesTheRuleOfTheIsaItRunsWith) {
  const Case c{.name = "64 -> 64 at 14x14", .c_in = 64, .c_out = 64, .h = 14, .w = 14};
  const Operands o = make_operands(c);
  const Conv2dOptions options = c.options();
  const PostOps post;
  const Conv2dCall call = validate_conv2d(o.input, o.weight, o.bias, options, post);
  std::string declined;
  EXPECT_TRUE(native::winograd_conv2d(call, native::WinogradTile::F4x4, &declined).defined())
      << declined;
  if (!native::cpu_has_full_rate_avx512()) GTEST_SKIP() << "this CPU has no full-rate AVX-512";
  const ScopedVectorIsa avx512(native::VectorIsa::Avx512);
  EXPECT_FALSE(native::winograd_conv2d(call, native::WinogradTile::F4x4, &declined).defined());
  EXPECT_EQ(declined, "too few channels to pay off (64→64)");
  // The Native algorithm runs it anyway.
  const ScopedConvAlgorithm native(ConvAlgorithm::Native);
  EXPECT_TRUE(native::winograd_conv2d(call, native::WinogradTile::F4x4, &declined).defined());
}

// REFOLD_VERBOSE and the profiler name the tile that ran.
TEST_F(NativeWinograd, TheDispatchLogNamesTheTile) {
  for (const auto& [h, tile] : {std::pair{28, "F(4x4,3x3)"}, std::pair{2, "F(2x2,3x3)"}}) {
    const Case c{.name = "log", .c_in = 48, .c_out = 48, .h = h, .w = h};
    const Operands o = make_operands(c);
    DispatchLog log;
    (void)functional::conv2d(o.input, o.weight, o.bias, c.options());
    EXPECT_THAT(log.take(), ::testing::ElementsAre(std::string("conv2d: winograd ") + tile));
  }
}

// Precision: under 48 input channels (a network's stem) the 4×4 tile's size is not taken —
// 32→64 at 28², 4×4 by cost and by the channel rule, runs on 2×2 tiles; 48→48 keeps 4×4.
TEST_F(NativeWinograd, FewInputChannelsTakeTheSmallerTile) {
  for (const auto& [c_in, tile] : {std::pair{32, "F(2x2,3x3)"}, std::pair{48, "F(4x4,3x3)"}}) {
    const Case c{.name = "stem", .c_in = c_in, .c_out = c_in == 32 ? 64 : 48, .h = 28, .w = 28};
    const Operands o = make_operands(c);
    DispatchLog log;
    (void)functional::conv2d(o.input, o.weight, o.bias, c.options());
    EXPECT_THAT(log.take(), ::testing::ElementsAre(std::string("conv2d: winograd ") + tile));
  }
}

// The chunk's scratch (V and M) is the calling thread's, reused from call to call: the only
// tensor a call allocates is its output, so no conv size leaves a block of its own behind.
TEST_F(NativeWinograd, AllocatesOnlyItsOutput) {
  for (const auto& [c_in, h] : {std::pair{64, 20}, std::pair{96, 14}}) {
    const Case c{.name = "scratch", .c_in = c_in, .c_out = 64, .h = h, .w = h};
    const Operands o = make_operands(c);
    const Conv2dOptions options = c.options();
    const PostOps post;
    const Conv2dCall call = validate_conv2d(o.input, o.weight, o.bias, options, post);
    for (const native::WinogradTile tile :
         {native::WinogradTile::F2x2, native::WinogradTile::F4x4}) {
      (void)native::winograd_conv2d(call, tile, nullptr);  // packs the weight first
      const std::size_t before = memory_stats().current_bytes;
      reset_peak_memory();
      const Tensor y = native::winograd_conv2d(call, tile, nullptr);
      EXPECT_EQ(memory_stats().peak_bytes - before, y.numel() * sizeof(float)) << c_in;
    }
  }
}

TEST_F(NativeWinograd, SameBitsWithOneOrTwoThreads) {
  const Case c{.name = "threads", .n = 2, .c_in = 48, .c_out = 48, .h = 20, .w = 18};
  const Operands o = make_operands(c);
  set_num_threads(1);
  const Tensor one = native::winograd_conv2d(o.input, o.weight, o.bias, c.options(), {}, nullptr);
  set_num_threads(2);
  const Tensor two = native::winograd_conv2d(o.input, o.weight, o.bias, c.options(), {}, nullptr);
  EXPECT_TRUE(testing::all_close(one, two, Tolerance::exact()));
}

struct DeclineCase {
  std::string name;
  std::function<void(Tensor& input, Tensor& weight, Conv2dOptions& options, PostOps& post)> edit;
  std::string reason;
};

TEST_F(NativeWinograd, DeclinesWhatItDoesNotTake) {
  const std::vector<DeclineCase> cases = {
      {"stride 2", [](Tensor&, Tensor&, Conv2dOptions& o, PostOps&) { o.stride = 2; },
       "stride 1 and dilation 1 only"},
      {"dilation 2", [](Tensor&, Tensor&, Conv2dOptions& o, PostOps&) { o.dilation = 2; },
       "stride 1 and dilation 1 only"},
      {"groups 2",
       [](Tensor&, Tensor& w, Conv2dOptions& o, PostOps&) {
         o.groups = 2;
         w = randn({40, 20, 3, 3});
       },
       "groups 1 only"},
      {"1x1 kernel",
       [](Tensor&, Tensor& w, Conv2dOptions&, PostOps&) {
         w = randn({40, 40, 1, 1});
       },
       "3x3 kernels only"},
      {"5x5 kernel",
       [](Tensor&, Tensor& w, Conv2dOptions& o, PostOps&) {
         w = randn({40, 40, 5, 5});
         o.padding = 2;
       },
       "3x3 kernels only"},
      {"44 output channels",
       [](Tensor&, Tensor& w, Conv2dOptions&, PostOps&) {
         w = randn({44, 40, 3, 3});
       },
       "output channels must be a multiple of 8"},
      {"44 input channels",
       [](Tensor& x, Tensor& w, Conv2dOptions&, PostOps&) {
         x = randn({1, 44, 8, 8}).contiguous(NHWC);
         w = randn({40, 44, 3, 3});
       },
       "input channels must be a multiple of 8"},
      {"16 -> 16 channels",
       [](Tensor& x, Tensor& w, Conv2dOptions&, PostOps&) {
         x = randn({1, 16, 8, 8}).contiguous(NHWC);
         w = randn({16, 16, 3, 3});
       },
       "too few channels to pay off (16→16)"},
      {"NCHW input", [](Tensor& x, Tensor&, Conv2dOptions&, PostOps&) { x = x.contiguous(); },
       "input not channels_last"},
      {"bfloat16",
       [](Tensor& x, Tensor& w, Conv2dOptions&, PostOps&) {
         x = x.to(DType::BFloat16);
         w = w.to(DType::BFloat16);
       },
       "float32 only"},
      {"NCHW residual",
       [](Tensor&, Tensor&, Conv2dOptions&, PostOps& p) {
         p.residual = randn({1, 40, 8, 8});
       },
       "residual not channels_last"},
      {"empty batch",
       [](Tensor& x, Tensor&, Conv2dOptions&, PostOps&) {
         x = empty({0, 40, 8, 8}, NHWC);
       },
       "empty output"},
      {"algorithm 'direct'",
       [](Tensor&, Tensor&, Conv2dOptions&, PostOps&) {
         set_conv_algorithm(ConvAlgorithm::Direct);
       },
       "conv algorithm is 'direct'"},
  };
  for (const DeclineCase& d : cases) {
    set_conv_algorithm(ConvAlgorithm::Auto);
    Tensor input = randn({1, 40, 8, 8}).contiguous(NHWC), weight = randn({40, 40, 3, 3});
    Conv2dOptions options;
    options.padding = 1;
    PostOps post;
    d.edit(input, weight, options, post);
    std::string declined;
    const Tensor y = native::winograd_conv2d(input, weight, {}, options, post, &declined);
    EXPECT_FALSE(y.defined()) << d.name;
    EXPECT_EQ(declined, d.reason) << d.name;
    // Without a place to say why, a decline is an error that says why.
    EXPECT_THAT([&] { (void)native::winograd_conv2d(input, weight, {}, options, post, nullptr); },
                ::testing::ThrowsMessage<Error>(HasSubstr("winograd declined: " + d.reason)))
        << d.name;
  }
}

TEST_F(NativeWinograd, InvalidArgumentsFailWithTheReferenceMessages) {
  const Tensor input = randn({1, 40, 8, 8}).contiguous(NHWC), weight = randn({40, 40, 3, 3});
  Conv2dOptions options;
  options.padding = 1;
  const Tensor bad_bias = randn({15});
  std::string reference_message;
  try {
    (void)reference::conv2d(input, weight, bad_bias, options);
  } catch (const Error& e) {
    reference_message = e.message();
  }
  ASSERT_THAT(reference_message, HasSubstr("bias"));
  std::string declined;
  EXPECT_THAT(
      [&] { (void)native::winograd_conv2d(input, weight, bad_bias, options, {}, &declined); },
      ::testing::ThrowsMessage<Error>(HasSubstr(reference_message)));
  PostOps post;
  post.residual = randn({1, 40, 8, 7}).contiguous(NHWC);
  EXPECT_THAT([&] { (void)native::winograd_conv2d(input, weight, {}, options, post, &declined); },
              ::testing::ThrowsMessage<Error>(HasSubstr("residual must have the output's sizes")));
}

TEST_F(NativeWinograd, TransformsAWeightOnceAndAgainAfterItChanges) {
  native::clear_cache();
  const Case c{.name = "cache"};
  Operands o = make_operands(c);
  const Conv2dOptions options = c.options();
  const auto run = [&](native::WinogradTile tile) {
    return native::winograd_conv2d(validate_conv2d(o.input, o.weight, o.bias, options, {}), tile,
                                   nullptr);
  };
  (void)run(native::WinogradTile::F2x2);
  (void)run(native::WinogradTile::F2x2);
  EXPECT_EQ(native::cache_stats().packs, 1u);
  EXPECT_EQ(native::cache_stats().hits, 1u);
  EXPECT_EQ(native::cache_stats().weights, 1u);
  EXPECT_EQ(native::cache_stats().bytes, 16u * 40u * 40u * sizeof(float));
  // The other tile packs the same weight its own way: 36 positions, cached beside the first.
  (void)run(native::WinogradTile::F4x4);
  EXPECT_EQ(native::cache_stats().packs, 2u);
  EXPECT_EQ(native::cache_stats().bytes, (16u + 36u) * 40u * 40u * sizeof(float));
  native::clear_cache();
  (void)native::winograd_conv2d(o.input, o.weight, o.bias, options, {}, nullptr);
  // Writing the weight bumps its version: the next call transforms it again, so the result
  // follows the new values.
  scale(o.weight, 2.0f);
  const Tensor y = native::winograd_conv2d(o.input, o.weight, o.bias, options, {}, nullptr);
  EXPECT_EQ(native::cache_stats().packs, 2u);
  EXPECT_TRUE(testing::all_close(y, reference::conv2d(o.input, o.weight, o.bias, options),
                                 Tolerance::op_f32()));
  native::clear_cache();
  EXPECT_EQ(native::cache_stats().weights, 0u);
  EXPECT_EQ(native::cache_stats().packs, 0u);
}

TEST_F(NativeWinograd, FunctionalConvRunsItUnlessTheAlgorithmIsDirect) {
  const Case c{.name = "dispatch", .c_in = 48, .c_out = 48, .h = 10, .w = 10};
  const Operands o = make_operands(c);
  native::clear_cache();
  set_conv_algorithm(ConvAlgorithm::Auto);
  const Tensor fast = functional::conv2d(o.input, o.weight, o.bias, c.options());
  EXPECT_EQ(native::cache_stats().packs, 1u);
  set_conv_algorithm(ConvAlgorithm::Direct);
  const Tensor direct = functional::conv2d(o.input, o.weight, o.bias, c.options());
  EXPECT_EQ(native::cache_stats().packs + native::cache_stats().hits, 1u);
  EXPECT_TRUE(testing::all_close(fast, direct, Tolerance::op_f32()));
  // A stride-2 conv is not Winograd's: functional::conv2d runs the native direct conv, which
  // packs the same weight its own way.
  Conv2dOptions strided = c.options();
  strided.stride = 2;
  set_conv_algorithm(ConvAlgorithm::Auto);
  const Tensor y = functional::conv2d(o.input, o.weight, o.bias, strided);
  EXPECT_EQ(native::cache_stats().packs, 2u);
  EXPECT_TRUE(testing::all_close(y, reference::conv2d(o.input, o.weight, o.bias, strided),
                                 Tolerance::op_f32()));
}

TEST(ConvAlgorithm, ParsesItsNamesAndRejectsOthers) {
  EXPECT_EQ(parse_conv_algorithm("auto"), ConvAlgorithm::Auto);
  EXPECT_EQ(parse_conv_algorithm("direct"), ConvAlgorithm::Direct);
  EXPECT_EQ(conv_algorithm_name(ConvAlgorithm::Auto), "auto");
  EXPECT_EQ(parse_conv_algorithm("native"), ConvAlgorithm::Native);
  EXPECT_EQ(conv_algorithm_name(ConvAlgorithm::Direct), "direct");
  EXPECT_EQ(conv_algorithm_name(ConvAlgorithm::Native), "native");
  EXPECT_THAT([] { (void)parse_conv_algorithm("winograd"); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("conv algorithm 'winograd' is not one of: auto, direct, native")));
}

// The Native algorithm runs Winograd below the channel rule (here 16→16, ρ 8), and the result is
// still the conv's.
TEST_F(NativeWinograd, TheNativeAlgorithmRunsItBelowTheChannelRule) {
  const Case c{.name = "16 -> 16", .c_in = 16, .c_out = 16, .h = 9, .w = 9};
  const Operands o = make_operands(c);
  const Conv2dOptions options = c.options();
  const PostOps post;
  const Conv2dCall call = validate_conv2d(o.input, o.weight, o.bias, options, post);
  std::string declined;
  set_conv_algorithm(ConvAlgorithm::Auto);
  EXPECT_FALSE(native::winograd_conv2d(call, &declined).defined());
  EXPECT_EQ(declined, "too few channels to pay off (16→16)");
  expect_matches_reference(winograd_with<native::WinogradTile::F2x2>, c);
  expect_matches_reference(winograd_with<native::WinogradTile::F4x4>, c);
}

TEST(VectorIsa, ParsesItsNamesCapsAndRejectsOthers) {
  EXPECT_EQ(native::parse_vector_isa("avx2"), native::VectorIsa::Avx2);
  EXPECT_EQ(native::parse_vector_isa("avx512"), native::VectorIsa::Avx512);
  EXPECT_EQ(native::vector_isa_name(native::VectorIsa::Avx512), "avx512");
  EXPECT_THAT([] { (void)native::parse_vector_isa("sse4"); },
              ::testing::ThrowsMessage<Error>(
                  HasSubstr("vector ISA 'sse4' is not one of: avx2, avx512 (REFOLD_NATIVE_ISA)")));
  {
    const ScopedVectorIsa avx2(native::VectorIsa::Avx2);
    EXPECT_EQ(native::vector_isa(), native::VectorIsa::Avx2);
  }
  const ScopedVectorIsa avx512(native::VectorIsa::Avx512);
  EXPECT_EQ(native::vector_isa(), native::cpu_has_full_rate_avx512() ? native::VectorIsa::Avx512
                                                                     : native::VectorIsa::Avx2);
  // Full rate implies the AVX-512 instructions.
  EXPECT_TRUE(!native::cpu_has_full_rate_avx512() || native::cpu_has_avx512());
}

}  // namespace
}  // namespace refold
