#include "kernels/native/recurrent.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "kernels/native/small_matmul.h"
#include "kernels/native/vector_math.h"
#include "refold/functional.h"
#include "refold/threads.h"

namespace refold::native {
namespace {

using reference::RecurrentActivation;
using Kind = RecurrentActivation::Kind;

#if REFOLD_HAVE_X86_KERNELS
// v = sigmoid(scale·v)·scale − (scale − 1) (vector_math.h's sigmoid): sigmoid with scale 1,
// tanh with scale 2; 16 lanes with AVX-512 (a step's gates took 1.3 ns an element on 8:
// Sequencer's 36 LSTMs, 14 ms).
REFOLD_TARGET_AVX512 void sigmoid_avx512(float* v, std::int64_t n, float scale) {
  const __m512 s = _mm512_set1_ps(scale), shift = _mm512_set1_ps(scale - 1.0f);
  for (std::int64_t i = 0; i < n; i += 16) {
    const std::int64_t left = n - i;
    const auto mask = static_cast<__mmask16>(left < 16 ? (1u << left) - 1 : 0xFFFFu);
    const __m512 x = _mm512_maskz_loadu_ps(mask, v + i);
    _mm512_mask_storeu_ps(v + i, mask, _mm512_fmsub_ps(sigmoid(_mm512_mul_ps(s, x)), s, shift));
  }
}

REFOLD_TARGET_AVX2 void sigmoid_avx2(float* v, std::int64_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale), shift = _mm256_set1_ps(scale - 1.0f);
  for (std::int64_t i = 0; i < n; i += 8) {
    const std::int64_t left = n - i;
    const __m256i mask = tail_mask(left < 8 ? left : 8);
    const __m256 x = _mm256_maskload_ps(v + i, mask);
    _mm256_maskstore_ps(v + i, mask, _mm256_fmsub_ps(sigmoid(_mm256_mul_ps(s, x)), s, shift));
  }
}
#endif

void apply(const RecurrentActivation& f, float* v, std::int64_t n) {
#if REFOLD_HAVE_X86_KERNELS
  if (f.kind == Kind::Sigmoid || f.kind == Kind::Tanh) {
    const float scale = f.kind == Kind::Tanh ? 2.0f : 1.0f;
    if (cpu_has_avx2_fma())
      return vector_isa() == VectorIsa::Avx512 ? sigmoid_avx512(v, n, scale)
                                               : sigmoid_avx2(v, n, scale);
  }
#endif
  for (std::int64_t i = 0; i < n; ++i) v[i] = f(v[i]);
}

// The dense block of `sizes` at element `offset` of the contiguous tensor t.
Tensor block(const Tensor& t, std::int64_t offset, const Shape& sizes) {
  return t.as_strided(sizes, contiguous_strides(sizes), t.storage_offset() + offset);
}

}  // namespace

reference::RecurrentOutputs recurrent(const reference::RecurrentInputs& in,
                                      const reference::RecurrentParams& params,
                                      const reference::RecurrentExtent& e, std::string* declined) {
  for (const Tensor* t : {&in.x, &in.w, &in.r, &in.b, &in.initial_h, &in.initial_c, &in.p}) {
    if (t->defined() && t->dtype() != DType::Float32) {
      *declined = "not float32";
      return {};
    }
  }
  reference::RecurrentParams p = params;
  p.hidden = e.hidden;
  const std::int64_t T = e.steps, B = e.batch, I = e.input, H = e.hidden, GH = p.gates() * H;
  const std::int64_t D = p.directions();
  const Tensor x =
      (p.batch_first ? in.x.permute({1, 0, 2}) : in.x).contiguous().reshape({T * B, I});
  const Tensor weights = in.w.contiguous(), recurrence = in.r.contiguous();
  const Tensor bias = in.b.defined() ? in.b.contiguous() : zeros({D, 2 * GH});
  const Tensor h0 = in.initial_h.defined() ? in.initial_h.contiguous() : Tensor();
  const Tensor c0 = in.initial_c.defined() ? in.initial_c.contiguous() : Tensor();
  const Tensor peep = in.p.defined() ? in.p.contiguous() : Tensor();
  reference::RecurrentOutputs out;
  out.y = empty(p.batch_first ? Shape{B, T, D, H} : Shape{T, D, B, H});
  const Shape state_sizes = p.batch_first ? Shape{B, D, H} : Shape{D, B, H};
  out.y_h = empty(state_sizes);
  if (p.cell == reference::RecurrentCell::LSTM) out.y_c = empty(state_sizes);
  // Element offsets of a state row and a Y row, in either layout.
  const auto state_row = [&](std::int64_t d, std::int64_t b) {
    return (p.batch_first ? b * D + d : d * B + b) * H;
  };
  const auto y_row = [&](std::int64_t t, std::int64_t d, std::int64_t b) {
    return (p.batch_first ? (b * T + t) * D + d : (t * D + d) * B + b) * H;
  };
  float* y = out.y.data<float>();
  // Every direction's x·Wᵀ + Wb in one product: [T·B, I] · [D·G·H, I]ᵀ → [T·B, D·G·H].
  Tensor input_bias = empty({D * GH});
  for (std::int64_t d = 0; d < D; ++d)
    std::memcpy(input_bias.data<float>() + d * GH, bias.data<float>() + d * 2 * GH,
                static_cast<std::size_t>(GH) * sizeof(float));
  const Tensor xw = functional::linear(x, block(weights, 0, {D * GH, I}), input_bias);
  // Each step's h·Rᵀ + Rb: with AVX2, Rᵀ packed once per direction and multiplied on the
  // calling thread (multiply_packed), the directions on threads of their own; else oneDNN's
  // product per step. GRU without linear_before_reset multiplies r ⊙ H by R_h apart: blocks 0–1
  // and block 2 are packed apart.
  const bool packed = cpu_has_avx2_fma();
  const bool split_reset = p.cell == reference::RecurrentCell::GRU && !p.linear_before_reset;
  const std::int64_t product_gates = split_reset ? 2 : p.gates();
  const auto run_one = [&](std::int64_t d) {
    reference::detail::RecurrentState<float> s;
    s.h.assign(static_cast<std::size_t>(B * H), 0.0f);
    s.c.assign(static_cast<std::size_t>(B * H), 0.0f);
    for (std::int64_t b = 0; b < B; ++b) {
      if (h0.defined())
        std::memcpy(s.h.data() + b * H, h0.data<float>() + state_row(d, b), H * sizeof(float));
      if (c0.defined())
        std::memcpy(s.c.data() + b * H, c0.data<float>() + state_row(d, b), H * sizeof(float));
    }
    const float* r = recurrence.data<float>() + d * GH * H;  // [G·H, H]: Rᵀ[k][n] = r[n·H + k]
    const float* r_bias = bias.data<float>() + d * 2 * GH + GH;
    std::optional<PackedMatrix> gates, reset;
    Tensor h_in;  // oneDNN's left operand
    if (packed) {
      gates.emplace(r, H, product_gates * H, 1, H);
      if (split_reset) reset.emplace(r + 2 * H * H, H, H, 1, H);
    } else {
      h_in = empty({B, H});
    }
    const auto products = [&](const float* h, std::int64_t begin, std::int64_t count, float* dst) {
      if (packed)
        return multiply_packed(h, B, H, begin == 0 ? *gates : *reset, r_bias + begin * H, dst,
                               count * H);
      std::memcpy(h_in.data<float>(), h, static_cast<std::size_t>(B * H) * sizeof(float));
      const Tensor product =
          functional::linear(h_in, block(recurrence, (d * GH + begin * H) * H, {count * H, H}),
                             block(bias, d * 2 * GH + GH + begin * H, {count * H}))
              .contiguous();
      std::memcpy(dst, product.data<float>(),
                  static_cast<std::size_t>(B * count * H) * sizeof(float));
    };
    const bool reverse = p.direction == reference::RecurrentDirection::Reverse || d == 1;
    reference::detail::run_direction<float>(
        p, p.activations.data() + d * p.functions(), reverse, T, B, e.lengths,
        peep.defined() ? peep.data<float>() + d * 3 * H : nullptr, s,
        [&](std::int64_t t) { return xw.data<float>() + (t * B * D + d) * GH; }, D * GH, products,
        apply,
        [&](std::int64_t t, const float* h) {
          for (std::int64_t b = 0; b < B; ++b)
            std::memcpy(y + y_row(t, d, b), h + b * H, H * sizeof(float));
        });
    for (std::int64_t b = 0; b < B; ++b) {
      std::memcpy(out.y_h.data<float>() + state_row(d, b), s.h.data() + b * H, H * sizeof(float));
      if (out.y_c.defined())
        std::memcpy(out.y_c.data<float>() + state_row(d, b), s.c.data() + b * H, H * sizeof(float));
    }
  };
  const int threads = packed ? static_cast<int>(std::min<std::int64_t>(D, get_num_threads())) : 1;
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
  for (std::int64_t d = 0; d < D; ++d) run_one(d);
  return out;
}

}  // namespace refold::native
