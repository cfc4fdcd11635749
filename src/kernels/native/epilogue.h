// What refold's own conv kernels apply to a result before writing it, fused into the store:
//   y = activation(conv + bias + residual)                     the head
//   y = step.activation(y·step.scale + step.shift [+ residual]) each step (refold/post_ops.h)
// AVX2, 8 output channels per vector; include only from files whose callers checked
// cpu_has_avx2_fma() (cpu.h).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/native/cpu.h"
#include "refold/post_ops.h"

#if REFOLD_HAVE_X86_KERNELS
#include <immintrin.h>

#include "kernels/native/tail_mask.h"
#include "kernels/native/vector_math.h"
#endif

namespace refold::native {

// One PostStep with its values per output channel (ConvEpilogue expands a per-tensor value).
struct EpilogueStep {
  const float* scale = nullptr;  // [C_out] or null (×1)
  const float* shift = nullptr;  // [C_out] or null (+0)
  bool add_residual = false;
  Activation activation = Activation::None;
  float negative_slope = 0.01f;
};

struct Epilogue {
  const float* bias = nullptr;  // [C_out] or null (no bias)
  // The whole residual, laid out like the output (NHWC: the same element offsets), or null.
  const float* residual = nullptr;
  bool residual_in_steps = false;  // a step adds it, not the head
  Activation activation = Activation::None;
  float negative_slope = 0.01f;  // LeakyReLU
  const EpilogueStep* steps = nullptr;
  int step_count = 0;
};

#if REFOLD_HAVE_X86_KERNELS

// activation(x) over 8 lanes. Sigmoid and SiLU are 1 / (1 + e^−x) (times x) with the vector
// exp (vector_math.h, within 2 ulp of std::exp), so within a few ulp of the reference; per lane
// through std::exp they took 3 ns an element, 15× oneDNN's fused swish. GELU goes through the
// vector erf (within 1.5e−6 of the exact value; per lane through std::erf it cost several times
// more); the others are exact in vector form.
REFOLD_TARGET_AVX2 inline __m256 activate(__m256 x, Activation activation, float negative_slope) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 three = _mm256_set1_ps(3.0f), six = _mm256_set1_ps(6.0f);
  switch (activation) {
    case Activation::None:
      return x;
    case Activation::ReLU:
      return _mm256_max_ps(x, zero);
    case Activation::ReLU6:
      return _mm256_min_ps(_mm256_max_ps(x, zero), six);
    case Activation::LeakyReLU: {
      const __m256 scaled = _mm256_mul_ps(x, _mm256_set1_ps(negative_slope));
      return _mm256_blendv_ps(scaled, x, _mm256_cmp_ps(x, zero, _CMP_GT_OQ));
    }
    case Activation::HardSigmoid:
    case Activation::HardSwish: {
      const __m256 gate =
          _mm256_div_ps(_mm256_min_ps(_mm256_max_ps(_mm256_add_ps(x, three), zero), six), six);
      return activation == Activation::HardSigmoid ? gate : _mm256_mul_ps(x, gate);
    }
    case Activation::Sigmoid:
      return sigmoid(x);
    case Activation::SiLU:
      return _mm256_mul_ps(x, sigmoid(x));
    case Activation::GELU:  // ½x·(1 + erf(x/√2)), the vector erf (vector_math.h)
      return gelu(x);
    case Activation::GELUTanh:  // x·sigmoid(2z), z = √(2/π)·(x + 0.044715·x³) (vector_math.h)
      return gelu_tanh(x);
  }
  return x;
}

// The epilogue of 8 output channels from `channel`: activation(acc + bias + residual), then
// each step; `offset` is the element's offset in the output (and so in the residual). Mul and
// add stay separate (no FMA), so each rounds as the graph's Mul and Add nodes do.
REFOLD_TARGET_AVX2 inline __m256 finish(__m256 acc, const Epilogue& e, std::int64_t channel,
                                        std::int64_t offset) {
  if (e.bias != nullptr) acc = _mm256_add_ps(acc, _mm256_loadu_ps(e.bias + channel));
  if (e.residual != nullptr && !e.residual_in_steps)
    acc = _mm256_add_ps(acc, _mm256_loadu_ps(e.residual + offset));
  acc = activate(acc, e.activation, e.negative_slope);
  for (int i = 0; i < e.step_count; ++i) {
    const EpilogueStep& s = e.steps[i];
    if (s.scale != nullptr) acc = _mm256_mul_ps(acc, _mm256_loadu_ps(s.scale + channel));
    if (s.shift != nullptr) acc = _mm256_add_ps(acc, _mm256_loadu_ps(s.shift + channel));
    if (s.add_residual) acc = _mm256_add_ps(acc, _mm256_loadu_ps(e.residual + offset));
    acc = activate(acc, s.activation, s.negative_slope);
  }
  return acc;
}

// One step over y[0..count) in place: y = activation(y·scale + shift + residual), each operand
// (a run of count values) optional, null for none, eight lanes at a time and the last partial
// vector masked (it touches nothing past element count − 1). finish()'s head is such a step too:
// no scale, the bias as the shift.
REFOLD_TARGET_AVX2 inline void step_run(float* y, std::int64_t count, const float* scale,
                                        const float* shift, const float* residual,
                                        Activation activation, float negative_slope) {
  if (scale == nullptr && shift == nullptr && residual == nullptr && activation == Activation::None)
    return;
  std::int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 v = _mm256_loadu_ps(y + i);
    if (scale != nullptr) v = _mm256_mul_ps(v, _mm256_loadu_ps(scale + i));
    if (shift != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(shift + i));
    if (residual != nullptr) v = _mm256_add_ps(v, _mm256_loadu_ps(residual + i));
    _mm256_storeu_ps(y + i, activate(v, activation, negative_slope));
  }
  if (i < count) {
    const __m256i mask = tail_mask(count - i);
    __m256 v = _mm256_maskload_ps(y + i, mask);
    if (scale != nullptr) v = _mm256_mul_ps(v, _mm256_maskload_ps(scale + i, mask));
    if (shift != nullptr) v = _mm256_add_ps(v, _mm256_maskload_ps(shift + i, mask));
    if (residual != nullptr) v = _mm256_add_ps(v, _mm256_maskload_ps(residual + i, mask));
    _mm256_maskstore_ps(y + i, mask, activate(v, activation, negative_slope));
  }
}

// finish() over `count` consecutive outputs in place — y[i] has channel c0 + i and its residual
// at e.residual + r0 + i (one NHWC row, or part of one) — a step at a time over the whole run
// instead of every step on each vector: each element goes through the same operations in the
// same order (the same bits), but every loop is branch-free. For values already in memory
// (elementwise chains, concat chains: 1.7–2× faster than finish() per vector on DenseNet's
// Concat → BatchNorm → ReLU); a conv's accumulators, in registers, take finish().
REFOLD_TARGET_AVX2 inline void finish_run(float* y, std::int64_t count, const Epilogue& e,
                                          std::int64_t c0, std::int64_t r0) {
  const float* residual = e.residual != nullptr ? e.residual + r0 : nullptr;
  step_run(y, count, nullptr, e.bias != nullptr ? e.bias + c0 : nullptr,
           e.residual_in_steps ? nullptr : residual, e.activation, e.negative_slope);
  for (int k = 0; k < e.step_count; ++k) {
    const EpilogueStep& s = e.steps[k];
    step_run(y, count, s.scale != nullptr ? s.scale + c0 : nullptr,
             s.shift != nullptr ? s.shift + c0 : nullptr, s.add_residual ? residual : nullptr,
             s.activation, s.negative_slope);
  }
}

#endif

}  // namespace refold::native
