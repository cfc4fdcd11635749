// native::winograd_conv2d (winograd_conv2d.h): validation, the decline rules and the chunked
// three-step schedule.
#include "kernels/native/winograd_conv2d.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/conv_rules.h"
#include "kernels/native/cpu.h"
#include "kernels/native/micro_kernel.h"
#include "kernels/native/thread_scratch.h"
#include "kernels/native/weight_cache.h"
#include "kernels/native/winograd_tiles.h"
#include "kernels/reference/conv_common.h"
#include "kernels/verbose.h"
#include "refold/conv_algorithm.h"
#include "refold/threads.h"

namespace refold::native {

namespace {

namespace ref = reference::detail;

// Precision: the 4×4 tile rounds about 6× as coarsely as the 2×2 (docs/native-kernels.md), and a
// conv's error is amplified by every layer after it. Inception-v3 under the Avx2 rules, whose
// 32-channel stem convs took 4×4 tiles: 1.0–1.1·10⁻³ from PyTorch against a tolerance of
// 8.9·10⁻⁴; every conv under 48 input channels on 2×2 tiles: 6.6·10⁻⁴ (session 51). In a CNN the
// convs with few input channels are those nearest the input, so below this many they take the
// 2×2 tile (or, below its channel rule, oneDNN).
constexpr std::int64_t kF4MinInChannels = 48;

// Scratch per chunk of tiles (V and M, α² positions × (C_in + C_out) floats per tile): about
// what two cores' L2 caches hold, so a chunk's three steps hit cache.
constexpr std::int64_t kChunkBytes = std::int64_t{2} << 20;
// Reading U_ξ (C_in·C_out floats) from memory costs about as long as the matrix products of
// this many tiles with it (2 flops per float per tile): the FMA rate over the memory bandwidth,
// ≈ 2·137 GFLOP/s / 17 GB/s on two Zen 3 cores. In a whole network at batch 1 the transformed
// weights do not stay in cache between inferences (RepVGG-A0's are 42 MB with 2×2 tiles), so
// each call reads its U from memory.
constexpr std::int64_t kWeightReadInTiles = 16;

// Why this kernel, with this tile, does not take a valid problem, or "" when it does.
template <WinogradTile Tile>
std::string decline_reason(const Conv2dOptions& options, const ref::Conv2dGeometry& g) {
  if (g.groups != 1) return "groups 1 only";
  if (g.kh != 3 || g.kw != 3) return "3x3 kernels only";
  if (!(options.stride == Size2d(1)) || !(options.dilation == Size2d(1)))
    return "stride 1 and dilation 1 only";
  if (g.in_channels % 8 != 0) return "input channels must be a multiple of 8";
  if (get_conv_algorithm() != ConvAlgorithm::Native &&
      !winograd_has_enough_channels(Tile, g, vector_isa()))
    return fmt::format("too few channels to pay off ({}→{})", g.in_channels, g.out_channels);
  return {};
}

// What differs between the tiles beyond the transforms (winograd_tiles.h): the name the dispatch
// log gives, the weight cache's packing, the decline rule.
struct TileKind {
  const char* name;
  Packing packing;
  DeclineRule decline;
};

const TileKind& kind_of(WinogradTile tile) {
  static const TileKind f2{"F(2x2,3x3)", Packing::Winograd2x2, decline_reason<WinogradTile::F2x2>};
  static const TileKind f4{"F(4x4,3x3)", Packing::Winograd4x4, decline_reason<WinogradTile::F4x4>};
  return tile == WinogradTile::F2x2 ? f2 : f4;
}

}  // namespace

// The channel rule. Per tile, the matrix products cost ∝ C_in·C_out and the transforms
// ∝ C_in + C_out; below some ρ = C_in·C_out / (C_in + C_out) the transforms dominate and oneDNN's
// direct conv is faster. All figures: 2 threads, layer by layer, conv_layers_bench (paired with
// oneDNN), bench/RESULTS.md.
//   VectorIsa::Avx2 (oneDNN's jit:avx2, or AVX-512 at half rate): ρ ≥ 20 for 2×2 tiles, 12 for
//   4×4, whose products are 1.78× fewer for the same transforms. 2×2: 48→48 at 56² (ρ 24)
//   0.74× oneDNN's time, 32→32 at 224² (16) 1.16×, 8→64 at 56² 2.4×; 4×4 (Zen 3): 24→24 at 56²
//   (12) 0.78×, 32→32 at 80² (16) 0.65×, 64→64 at 40² 0.72×, 16→16 at 56² (8) 1.8×.
//   AVX-512 (cpu.h's VectorIsa::Avx512, full rate: oneDNN's brgconv at about 95 % of the FMA
//   limit, refold's kernels, with AVX2 transforms, well below): the products must also pay for
//   reading U, which few tiles share, so the rule is on ρ·T / (T + kWeightReadInTiles), T the
//   tiles: ≥ 40 for 2×2 tiles, 24 for 4×4; and with fewer than 2·kWeightReadInTiles tiles the
//   read of U, α²/9 of the direct conv's weight, decides: ResNet-18's 512→512 at 7² (16 tiles of
//   2×2) took 1.2 ms in the network against brgconv's 0.95. Xeon (Sapphire Rapids class), 4×4:
//   96→96 at 28² (36) 0.70×, 192→192 at 14² (48) 0.88×, 64→64 at 40² (28) 0.84×, 48→48 at 56²
//   (22) 1.01×, 48→48 at 28² (18) 1.07×, 64→64 at 14² (16) 1.36×, 32→32 at 80² (15) 1.23×; 2×2:
//   96→96 at 28² (44) 0.89×, 192→192 at 14² (72) 0.88×, 64→64 at 40² (31) 1.08×.
namespace {

// The m×m output tiles of a batch, in double: a shape that allocates no tensor (a zero-sized
// channel dim) may still have a tile count past int64 (found by the optimize-run fuzzer).
double tile_count(WinogradTile tile, std::int64_t batch, std::int64_t out_h, std::int64_t out_w) {
  const std::int64_t m = tile_side(tile);
  return static_cast<double>(batch) * static_cast<double>((out_h + m - 1) / m) *
         static_cast<double>((out_w + m - 1) / m);
}

}  // namespace

bool winograd_has_enough_channels(WinogradTile tile, const ref::Conv2dGeometry& g, VectorIsa isa) {
  const std::int64_t products = g.in_channels * g.out_channels;
  const std::int64_t transforms = g.in_channels + g.out_channels;
  const bool f2 = tile == WinogradTile::F2x2;
  if (isa == VectorIsa::Avx2) return products >= (f2 ? 20 : 12) * transforms;
  const double tiles = tile_count(tile, g.batch, g.out_h, g.out_w);
  return tiles >= 2 * kWeightReadInTiles &&
         static_cast<double>(products) * tiles >=
             (f2 ? 40 : 24) * static_cast<double>(transforms) * (tiles + kWeightReadInTiles);
}

WinogradTile winograd_tile(std::int64_t batch, std::int64_t out_h, std::int64_t out_w) {
  const auto cost = [&](WinogradTile tile) {
    return static_cast<double>(tile_positions(tile)) *
           (tile_count(tile, batch, out_h, out_w) + kWeightReadInTiles);
  };
  return cost(WinogradTile::F4x4) < cost(WinogradTile::F2x2) ? WinogradTile::F4x4
                                                             : WinogradTile::F2x2;
}

Tensor winograd_conv2d(const Conv2dCall& call, std::string* declined) {
  const ref::Conv2dGeometry& g = call.geometry;
  WinogradTile tile = winograd_tile(g.batch, g.out_h, g.out_w);
  if (tile == WinogradTile::F4x4 && g.in_channels < kF4MinInChannels) tile = WinogradTile::F2x2;
  return winograd_conv2d(call, tile, declined);
}

Tensor winograd_conv2d(const Conv2dCall& call, WinogradTile tile, std::string* declined) {
  const TileKind& kind = kind_of(tile);
  if (!accept_conv2d("winograd", call, kind.decline, declined)) return {};
  note_dispatch_detail(kind.name);
  const ref::Conv2dGeometry& g = call.geometry;
  const Tensor &input = call.input, &weight = call.weight, &bias = call.bias;
  const PostOps& post = call.post;

  const std::int64_t side = tile_side(tile), positions = tile_positions(tile);
  TileGeometry t;
  t.tile = tile;
  t.height = g.in_h, t.width = g.in_w, t.in_channels = g.in_channels;
  t.out_h = g.out_h, t.out_w = g.out_w, t.out_channels = g.out_channels;
  t.pad_top = g.pads.top, t.pad_left = g.pads.left;
  t.tiles_h = (g.out_h + side - 1) / side, t.tiles_w = (g.out_w + side - 1) / side;
  const std::int64_t tiles = g.batch * t.tiles_per_image();

  const auto u = packed_weights(weight, kind.packing,
                                [tile](const Tensor& w) { return transform_weights(w, tile); });
  const ConvEpilogue epilogue(bias, g.out_channels, post);

  // Chunks of equal size (a multiple of the micro-kernel's 6 rows) within kChunkBytes.
  const std::int64_t bytes_per_tile =
      positions * (g.in_channels + g.out_channels) * std::int64_t{sizeof(float)};
  const std::int64_t chunks = std::max<std::int64_t>(1, tiles * bytes_per_tile / kChunkBytes);
  const std::int64_t chunk = (((tiles + chunks - 1) / chunks) + 5) / 6 * 6;
  float* v = thread_scratch(
      static_cast<std::size_t>(positions * chunk * (g.in_channels + g.out_channels)));
  float* m = v + positions * chunk * g.in_channels;
  const std::int64_t v_stride = chunk * g.in_channels;  // between positions ξ
  const std::int64_t m_stride = chunk * g.out_channels;

  Tensor output = conv_output(call);
  const float* in = input.data<float>();
  float* out = output.data<float>();
  const float* packed = u->data();
  const std::int64_t columns = (g.out_channels + kPanelWidth - 1) / kPanelWidth;
  const int threads = get_num_threads();

  for (std::int64_t first = 0; first < tiles; first += chunk) {
    const std::int64_t count = std::min(chunk, tiles - first);
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (std::int64_t s = 0; s < count; ++s) transform_input(in, t, first + s, s, v, v_stride);
        // One job per (position ξ, 32 output channels from o0): M_ξ[:, o0…] = V_ξ · U_ξ[:, o0…]
#pragma omp for schedule(static)
      for (std::int64_t job = 0; job < positions * columns; ++job) {
        const std::int64_t xi = job / columns, o0 = job % columns * kPanelWidth;
        const std::int64_t width = std::min(kPanelWidth, g.out_channels - o0);
        const float* rows[kPanelRows];
        Panel p;
        p.a = rows;
        p.depth = g.in_channels;
        p.b = packed + xi * g.in_channels * g.out_channels + o0 * g.in_channels;
        p.width = width;
        p.ldc = g.out_channels;
        for (std::int64_t r0 = 0; r0 < count; r0 += kPanelRows) {
          p.rows = std::min(kPanelRows, count - r0);
          for (std::int64_t r = 0; r < p.rows; ++r)
            rows[r] = v + xi * v_stride + (r0 + r) * g.in_channels;
          p.c = m + (xi * m_stride) + r0 * g.out_channels + o0;
          multiply_panel(p);
        }
      }
#pragma omp for schedule(static)
      for (std::int64_t s = 0; s < count; ++s)
        transform_output(m, m_stride, t, first + s, s, epilogue.get(), out);
    }
  }
  return output;
}

}  // namespace refold::native
