// A linear map of one 4-d input as one 2-d convolution: the value that the general
// re-parameterization pass (src/passes/reparameterize.cpp) carries along every path of a
// linear region, and the algebra that composes and sums such maps exactly.
//
//   T(x)[n, o, y, z] = Σ_{c in group(o)} Σ_{i < K_h, j < K_w}
//                        W[o, c mod (C/G), i, j] · x̃[n, c, y·S_h + i·D_h − P_top, z·S_w + j·D_w −
//                        P_left]
//
// where x̃ is x with zeros outside it (x read at P_top rows above it … P_bottom rows below it).
// A map has no bias: the pass keeps the constant part of a region apart (it is what the region
// computes where x is all zeros, which decides whether a later zero padding is exact).
// Pads may be negative while a region is being read (a Slice that crops x); the merged conv
// needs them ≥ 0.
//
// Why each operation is exact (docs/reparameterization.md, "General rule"):
//   - then(): conv2 ∘ T. Tap b of conv2 at output y reads T at y·s2 + b·d2 − p2, which reads x
//     at (y·s2 + b·d2 − p2)·S + a·D − P: one conv with stride S·s2, pads P + p2·S, and tap
//     offsets a·D + b·d2·S on the dilation grid D' = gcd(D, d2·S). Exact when conv2 pads
//     nothing, or when T is pointwise (1×1, so T is its constant part wherever x̃ is zero,
//     which the caller checks is 0). Output sizes agree for every input size (nested floor
//     division: ⌊(⌊A/S⌋ − e)/s2⌋ = ⌊(A − e·S)/(S·s2)⌋).
//   - plus(): T1 + T2 over the same x. Same stride; both start reading at offsets that fit on
//     one dilation grid from the larger top pad; equal output size for every input size iff
//     P_top + P_bottom − D·(K − 1) agrees (the numerator of the output-size formula).
//   - Group structures G1 and G2 are both block-diagonal with gcd(G1, G2) blocks, so maps
//     compose and add after regrouping to the gcd.
// Arithmetic is in double; the pass rounds once when it builds the merged Conv.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "refold/op_options.h"
#include "refold/reparam/kernel_algebra.h"

namespace refold::reparam {

struct ConvMap {
  std::int64_t out_channels = 0, in_channels = 0, groups = 1;
  Size2d kernel = 1, stride = 1, dilation = 1;
  Pads2d pads;
  std::vector<double> weight;  // [out, in / groups, kh, kw], row-major

  // 1×1, stride 1: the map reads one pixel of x per output pixel.
  bool pointwise() const { return kernel == Size2d(1, 1) && stride == Size2d(1, 1); }
  // Multiply-adds per output pixel.
  double macs() const {
    return static_cast<double>(out_channels) * static_cast<double>(in_channels / groups) *
           static_cast<double>(kernel.h * kernel.w);
  }
  // Where W[o, c, i, j] (c local to its group) is in `weight`.
  std::size_t index(std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j) const;
  double& at(std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j);
  double at(std::int64_t o, std::int64_t c, std::int64_t i, std::int64_t j) const;
};

// x ↦ x over `channels` channels (depthwise 1×1 with weight 1).
ConvMap identity_map(std::int64_t channels);
// A conv's kernel (weight only; its bias is the caller's constant part) with its geometry.
ConvMap conv_map(const ConvKernel& kernel, Size2d stride, const Pads2d& pads, Size2d dilation);
// AveragePool counting its padding: depthwise, every tap 1/(kh·kw).
ConvMap avg_pool_map(std::int64_t channels, Size2d kernel, Size2d stride, const Pads2d& pads);

// `second` applied to the output of `first` (first.out_channels == second.in_channels): the
// padding of `second` is padded(first, …) first. The caller has checked the constant part.
ConvMap then(const ConvMap& first, const ConvMap& second);
// then(first, second).macs() from the geometry alone, without composing (the weight it would
// build has that many elements).
double then_macs(const ConvMap& first, const ConvMap& second);
// The map's output padded by `pads` (positive: zeros, as a Pad or a conv's padding writes
// them; negative: a crop). A crop is always exact (the pads on x shrink by c·S). Zero padding
// is exact only for a 1×1 map that does not crop that side: its output outside x's image is
// its constant part, which the caller has checked is 0 — else "branch mismatch: …".
ConvMap padded(const ConvMap& map, const Pads2d& pads);
// Per-output-channel scale s[o] (size out_channels).
ConvMap scaled(const ConvMap& map, const std::vector<double>& scale);
// a + b over the same input; throws "branch mismatch: …" naming the geometry that differs.
ConvMap plus(const ConvMap& a, const ConvMap& b);
// The same map with `groups` blocks, for groups dividing map.groups (expands the weight).
ConvMap regrouped(const ConvMap& map, std::int64_t groups);
// The largest block structure the weight has (a dense map whose weight is block-diagonal
// becomes grouped), so that the merged conv does no multiply by a known zero block.
ConvMap compact_groups(const ConvMap& map);
// Σ_{taps} W[o, c, :, :] per (o, c) of the dense form: what the map makes of a constant input
// c (used for conv of a constant part): out[o] = Σ_c sum_taps[o][c]·value[c].
std::vector<double> apply_to_constant(const ConvMap& map, const std::vector<double>& value);

// The map as a ConvKernel in `dtype` with `bias` (empty = none), each value rounded once.
ConvKernel to_kernel(const ConvMap& map, const std::vector<double>& bias, DType dtype);

std::string geometry_text(const ConvMap& map);  // "3x3 stride 1 pads (1, 1, 1, 1) groups 8"

}  // namespace refold::reparam
