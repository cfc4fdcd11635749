// A conv whose input and output are single pixels — squeeze-and-excitation's 1×1 convs after a
// global pool, a classifier head written as a conv — is a matrix-vector product per sample:
//
//   y[n, o] = epilogue(b[o] + Σ_c W[o, c]·x[n, c])      (kh = kw = 1, H = W = 1, groups 1)
//
// refold runs it on the calling thread: a few thousand multiply-adds, where oneDNN's primitive
// spent a parallel region's fork and barrier (7–10 µs a conv on 2 threads of an AVX-512 Xeon,
// against 2–10 µs here). Above kMaxPixelConvMacs multiply-adds (2^15: EfficientNet-B0's
// 1152 ↔ 48 SE convs, 55 k, took 16–20 µs here against 13–14 with oneDNN's two threads, which
// share the weight's traffic) it declines, and oneDNN's parallel kernel runs it. Same contract as
// the other native convs (kernels/conv2d_call.h): a valid call it does not take is declined with
// the reason (not float32, not one pixel, grouped, too large, no AVX2/FMA, the conv algorithm set
// to 'direct').
#pragma once

#include <cstdint>
#include <string>

#include "kernels/conv2d_call.h"
#include "refold/tensor.h"

namespace refold::native {

inline constexpr std::int64_t kMaxPixelConvMacs = std::int64_t{1} << 15;

Tensor pixel_conv2d(const Conv2dCall& call, std::string* declined);

}  // namespace refold::native
