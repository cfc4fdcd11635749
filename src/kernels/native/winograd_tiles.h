// The three transforms of Winograd's minimal filtering algorithm F(m×m, 3×3) (Lavin & Gray,
// "Fast Algorithms for Convolutional Neural Networks", 2016), for output tiles of m = 2 or 4.
// An m×m output tile Y of a 3×3 cross-correlation of the α×α input tile d (α = m + 2; rows
// m·ty − pad_top …, columns m·tx − pad_left …) with the kernel g is
//
//   Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A        ⊙: element-wise over the α² positions ξ
//
// F(2×2, 3×3), interpolation points 0, ±1, ∞:
//        ⎡1  0 −1  0⎤        ⎡ 1    0    0 ⎤
//   Bᵀ = ⎢0  1  1  0⎥    G = ⎢ ½    ½    ½ ⎥    Aᵀ = ⎡1  1  1  0⎤
//        ⎢0 −1  1  0⎥        ⎢ ½   −½    ½ ⎥         ⎣0  1 −1 −1⎦
//        ⎣0  1  0 −1⎦        ⎣ 0    0    1 ⎦
//
// F(4×4, 3×3), interpolation points 0, ±1, ½, −2, ∞:
//        ⎡1 −³⁄₂ −2  ³⁄₂  1  0⎤        ⎡   1       0      0   ⎤
//        ⎢0  −1   ½  ⁵⁄₂  1  0⎥        ⎢   ⅓       ⅓      ⅓   ⎥         ⎡1  1  1  1   1  0⎤
//   Bᵀ = ⎢0   1 −⁵⁄₂  ½   1  0⎥    G = ⎢  −⅓       ⅓     −⅓   ⎥    Aᵀ = ⎢0  1 −1  ½  −2  0⎥
//        ⎢0  −2  −1   2   1  0⎥        ⎢−16/15  −8/15  −4/15 ⎥         ⎢0  1  1  ¼   4  0⎥
//        ⎢0   ½  −1  −½   1  0⎥        ⎢ 1/15   −2/15   4/15 ⎥         ⎣0  1 −1  ⅛  −8  1⎦
//        ⎣0   1 −³⁄₂ −2  ³⁄₂  1⎦        ⎣   0       0      1   ⎦
// (the rows of Bᵀ are the coefficients of Π over the other finite points of (x − point); the
// last one of Π over all of them). The usual points 0, ±1, ±2 have sparser transforms but larger
// coefficients (5 in Bᵀ, 8 in Aᵀ, 1/24 in G): the channel sums of the products below are
// rounded in float32 at the transformed positions' scale, and these points halve that error at
// the output (Barabasz et al., "Error analysis and improving the accuracy of Winograd
// convolution for deep neural networks", 2020; docs/native-kernels.md) for 3 more operations per
// 1-d input transform and 2 per output transform.
//
// Over channels the ⊙ becomes α² independent matrix products, one per position ξ:
//   M_ξ[t][o] = Σ_i V_ξ[t][i] · U_ξ[i][o],   V_ξ = (Bᵀ d B)_ξ per tile t and input channel i,
//                                            U_ξ = (G g Gᵀ)_ξ per input i and output o,
// which is where the saving is: per output pixel and (i, o), α²/m² multiply-adds instead of 9 —
// 4 for F(2×2), 2.25 for F(4×4). The larger tile's transforms have larger coefficients, so its
// rounding error is larger (still within the fp32 tolerance, docs/testing.md), and its last row
// or column of tiles wastes more work when m does not divide the output size.
// Activations are NHWC float32, so every transform runs over 8 channels at a time (AVX2).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/native/epilogue.h"
#include "kernels/native/micro_kernel.h"
#include "refold/tensor.h"

namespace refold::native {

// The output tile's side m.
enum class WinogradTile : std::int64_t { F2x2 = 2, F4x4 = 4 };

constexpr std::int64_t tile_side(WinogradTile tile) { return static_cast<std::int64_t>(tile); }
// α²: the transformed tile's positions ξ (16 for F(2×2), 36 for F(4×4)).
constexpr std::int64_t tile_positions(WinogradTile tile) {
  return (tile_side(tile) + 2) * (tile_side(tile) + 2);
}

// One conv problem as the transforms see it: NHWC float32 input and output.
struct TileGeometry {
  WinogradTile tile = WinogradTile::F2x2;
  std::int64_t height = 0, width = 0, in_channels = 0;  // input, per image
  std::int64_t out_h = 0, out_w = 0, out_channels = 0;  // output, per image
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t tiles_h = 0, tiles_w = 0;  // ⌈out_h / m⌉, ⌈out_w / m⌉: tiles per image

  std::int64_t tiles_per_image() const { return tiles_h * tiles_w; }
};

// U = G g Gᵀ for every (o, i) of a [C_out, C_in, 3, 3] float32 weight (any strides), computed
// in double and packed the way micro_kernel.h reads B: position ξ starts at ξ·C_in·C_out; within
// it, output channels come in column blocks of kBlockWidth (the last one may be 8 wide), block
// [o0, o0 + w) at o0·C_in, stored [C_in][w]. C_out must be a multiple of 8.
std::vector<float> transform_weights(const Tensor& weight, WinogradTile tile);

// V_ξ[slot][i] = (Bᵀ d B)_ξ of tile `tile` (numbered image-major, then row, then column) for
// every input channel i, written at v + ξ·position_stride + slot·C_in. Input rows and columns
// outside the image read as zero (the conv's padding). C_in must be a multiple of 8.
void transform_input(const float* input, const TileGeometry& g, std::int64_t tile,
                     std::int64_t slot, float* v, std::int64_t position_stride);

// Y = Aᵀ M A of tile `tile` from M_ξ[slot][o] at m + ξ·position_stride + slot·C_out, then the
// epilogue (with its bias always set); writes the tile's output pixels that lie inside the output
// (the last row or column of tiles may stick out). C_out must be a multiple of 8.
void transform_output(const float* m, std::int64_t position_stride, const TileGeometry& g,
                      std::int64_t tile, std::int64_t slot, const Epilogue& epilogue, float* out);

}  // namespace refold::native
