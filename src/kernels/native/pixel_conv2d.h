// A conv whose input and output are single pixels — squeeze-and-excitation's 1×1 convs after a
// global pool, a classifier head written as a conv — is a matrix-vector product per sample:
//
//   y[n, o] = epilogue(b[o] + Σ_c W[o, c]·x[n, c])      (kh = kw = 1, H = W = 1, groups 1)
//
// refold computes eight outputs at a time, eight independent FMA chains over the input channels
// reduced by horizontal adds (one chain per output waited on each FMA's latency), on the calling
// thread up to kParallelPixelConvMacs multiply-adds and split over refold's threads above.
// oneDNN's primitive spent a parallel region's fork and barrier on the small ones, and its 1×1
// kernels are built for many pixels: measured on 2 threads of the Xeon (AVX-512), refold took
// 0.14–0.3× oneDNN's time on MobileNetV3's and GhostNet's SE convs (384–2,400 multiply-adds,
// 1–3 µs), 0.34–0.5× on EfficientNet-B0's 1152 ↔ 48 and MobileNetV3-Large's 576 ↔ 144
// (4–13 µs), and 0.76–0.91× on a 1280 → 1000 or 2048 → 512 classifier head. Same contract as the
// other native convs (kernels/conv2d_call.h): a valid call it does not take is declined with the
// reason (not float32, not one pixel, grouped, no AVX2/FMA, the conv algorithm set to 'direct').
#pragma once

#include <cstdint>
#include <string>

#include "kernels/conv2d_call.h"
#include "refold/tensor.h"

namespace refold::native {

inline constexpr std::int64_t kParallelPixelConvMacs = std::int64_t{1} << 15;

Tensor pixel_conv2d(const Conv2dCall& call, std::string* declined);

}  // namespace refold::native
