// native/activation_pass.h.
#include "kernels/native/activation_pass.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/native/cpu.h"
#include "kernels/native/epilogue.h"
#include "kernels/native/vector_math.h"
#include "refold/conv_algorithm.h"
#include "refold/threads.h"

namespace refold::native {

namespace {

// Elements per job: large enough that a job's work dwarfs the loop's overhead, small enough
// that two threads share even a 7×7 layer's output.
constexpr std::int64_t kChunk = 4096;
// Below this, one thread: the fork and join of the team cost more than half the work.
constexpr std::int64_t kParallelFrom = 16384;

#if REFOLD_HAVE_X86_KERNELS

// sigmoid(x), x·sigmoid(x), GELU(x) or its tanh approximation over 16 lanes (vector_math.h).
REFOLD_TARGET_AVX512 inline __m512 activate16(__m512 x, Activation activation) {
  switch (activation) {
    case Activation::GELU:
      return gelu(x);
    case Activation::GELUTanh:
      return gelu_tanh(x);
    case Activation::SiLU:
      return _mm512_mul_ps(x, sigmoid(x));
    default:
      return sigmoid(x);
  }
}

REFOLD_TARGET_AVX512 void run_avx512(float* y, std::int64_t count, Activation activation) {
  std::int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_ps(y + i, activate16(_mm512_loadu_ps(y + i), activation));
  if (i < count) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (count - i)) - 1);
    _mm512_mask_storeu_ps(y + i, tail, activate16(_mm512_maskz_loadu_ps(tail, y + i), activation));
  }
}

REFOLD_TARGET_AVX2 void run_avx2(float* y, std::int64_t count, Activation activation) {
  step_run(y, count, nullptr, nullptr, nullptr, activation, 0.0f);
}

#endif

bool passes_activation(Activation a) {
  return a == Activation::Sigmoid || a == Activation::SiLU || a == Activation::GELU ||
         a == Activation::GELUTanh;
}

// oneDNN's GELU post-ops (erf and tanh) slow its convs at every size; the others only below
// kAvx512MinElements with AVX-512 (EfficientViT-L1: gelu_tanh in the post-ops, 1.125× the time
// of a separate pass).
bool always_a_pass(Activation a) { return a == Activation::GELU || a == Activation::GELUTanh; }

}  // namespace

std::string activation_pass_decline(const PostOps& post, DType dtype, std::int64_t elements) {
  if (!passes_activation(post.activation))
    return "the activation is not sigmoid, SiLU or GELU (erf or tanh)";
  if (!post.then.empty()) return "steps after the activation";
  if (dtype != DType::Float32) return "float32 only";
  if (get_conv_algorithm() == ConvAlgorithm::Direct) return "conv algorithm is 'direct'";
  if (!cpu_has_avx2_fma()) return "needs AVX2 and FMA";
  if (onednn_has_avx512_convs() && !always_a_pass(post.activation) && elements < kAvx512MinElements)
    return fmt::format("{} output elements: oneDNN's AVX-512 post-op is as fast below {}", elements,
                       kAvx512MinElements);
  return {};
}

void activation_pass(Tensor& y, Activation activation) {
  REFOLD_CHECK(passes_activation(activation),
               "activation_pass: {} is not sigmoid, SiLU or GELU (erf or tanh)",
               activation_name(activation));
  REFOLD_CHECK(y.dtype() == DType::Float32 && y.is_non_overlapping_and_dense(),
               "activation_pass: needs a dense float32 tensor, got {}", y.description());
#if REFOLD_HAVE_X86_KERNELS
  float* data = y.data<float>();
  const std::int64_t count = y.numel();
  const bool wide = cpu_has_avx512() && max_vector_isa() == VectorIsa::Avx512;
  const std::int64_t chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) num_threads(get_num_threads()) if (count >= kParallelFrom)
  for (std::int64_t c = 0; c < chunks; ++c) {
    float* part = data + c * kChunk;
    const std::int64_t n = std::min(kChunk, count - c * kChunk);
    if (wide) {
      run_avx512(part, n, activation);
    } else {
      run_avx2(part, n, activation);
    }
  }
#else
  fail("activation_pass: built without x86 kernels");
#endif
}

}  // namespace refold::native
