// The geometry of ONNX Col2Im (torch.nn.functional.fold), shared by the reference and the native
// kernel: which image position each column element adds to.
//
// X [N, C·K, L] holds, for every channel c, K = ∏ k_a taps of L = ∏ L_a blocks; per spatial axis a
//   L_a = ⌊(D_a + pad_begin_a + pad_end_a − dilation_a·(k_a − 1) − 1) / stride_a⌋ + 1
// and, with the tap j and the block l multi-indices row-major over (k_a) and (L_a),
//   y[n, c, p] = Σ over (j, l) with p_a = l_a·stride_a − pad_begin_a + j_a·dilation_a for every a
//                of X[n, c·K + j, l]
// (positions outside [0, D_a), the padding, are dropped; overlapping blocks add up).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace refold::reference {

struct Col2ImParams {
  std::vector<std::int64_t> image, block;  // D_a and k_a (image_shape, block_shape)
  std::vector<std::int64_t> stride, dilation, pad_begin, pad_end;  // one per spatial axis
};

// What check_col2im (onnx_ops.h) derives from X and the parameters.
struct Col2ImExtent {
  std::vector<std::int64_t> blocks;     // L_a
  std::int64_t taps = 1;                // K = ∏ k_a
  std::int64_t plane = 1;               // ∏ D_a, one image channel
  std::vector<std::int64_t> out_sizes;  // [N, C, D_1, …, D_r]
};

namespace detail {

// Calls add(p, j, l) for every tap j of every block l that lands inside the image: p the
// position's row-major offset in the D_1 × … × D_r image, j and l as above. blocks: the L_a.
template <typename Add>
void for_each_col2im_tap(const Col2ImParams& g, const std::vector<std::int64_t>& blocks,
                         Add&& add) {
  const std::size_t r = g.image.size();
  std::int64_t taps = 1;
  for (std::size_t a = 0; a < r; ++a) taps *= g.block[a];
  std::vector<std::int64_t> tap(r), lo(r), hi(r), at(r);
  for (std::int64_t j = 0; j < taps; ++j) {
    // tap j's multi-index, and per axis the blocks whose position along it is inside the image:
    // 0 ≤ l·s − p + t·d < D  ⇔  l ∈ [⌈(p − t·d) / s⌉, ⌊(D − 1 + p − t·d) / s⌋]
    bool any = true;
    for (std::size_t a = r, rest = static_cast<std::size_t>(j); a-- > 0;) {
      tap[a] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(g.block[a]));
      rest /= static_cast<std::size_t>(g.block[a]);
      const std::int64_t shift = g.pad_begin[a] - tap[a] * g.dilation[a];  // p − t·d
      const std::int64_t s = g.stride[a];
      lo[a] = shift > 0 ? (shift + s - 1) / s : 0;
      const std::int64_t last = g.image[a] - 1 + shift;  // ⌊last / s⌋, last may be negative
      hi[a] = std::min(blocks[a], last < 0 ? 0 : last / s + 1);
      any = any && lo[a] < hi[a];
    }
    if (!any) continue;
    at = lo;
    for (;;) {
      std::int64_t position = 0, block = 0;
      for (std::size_t a = 0; a + 1 < r; ++a) {
        position =
            position * g.image[a] + at[a] * g.stride[a] - g.pad_begin[a] + tap[a] * g.dilation[a];
        block = block * blocks[a] + at[a];
      }
      // The last axis in one run: position steps by its stride, the block by 1.
      const std::size_t z = r - 1;
      const std::int64_t base = position * g.image[z] - g.pad_begin[z] + tap[z] * g.dilation[z];
      block *= blocks[z];
      for (std::int64_t l = lo[z]; l < hi[z]; ++l) add(base + l * g.stride[z], j, block + l);
      // The next block position over the outer axes (an odometer within [lo, hi)).
      std::size_t a = z;
      while (a > 0 && ++at[a - 1] == hi[a - 1]) {
        at[a - 1] = lo[a - 1];
        --a;
      }
      if (a == 0) break;
    }
  }
}

}  // namespace detail
}  // namespace refold::reference
