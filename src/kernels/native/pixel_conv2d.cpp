// native/pixel_conv2d.h.
#include "kernels/native/pixel_conv2d.h"

#include "kernels/native/conv_rules.h"
#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "refold/conv_algorithm.h"

namespace refold::native {
namespace {

std::string decline_reason(const Conv2dCall& call) {
  const reference::detail::Conv2dGeometry& g = call.geometry;
  if (get_conv_algorithm() == ConvAlgorithm::Direct) return "conv algorithm is 'direct'";
  if (!cpu_has_avx2_fma()) return "needs AVX2 and FMA";
  if (call.input.dtype() != DType::Float32 || call.weight.dtype() != DType::Float32 ||
      (call.bias.defined() && call.bias.dtype() != DType::Float32))
    return "float32 only";
  if (g.in_h != 1 || g.in_w != 1 || g.out_h != 1 || g.out_w != 1 || g.kh != 1 || g.kw != 1)
    return "not a 1×1 conv of one pixel";
  if (g.groups != 1) return "groups 1 only";
  if (g.batch == 0 || g.in_channels == 0 || g.out_channels == 0) return "empty";
  if (g.batch * g.in_channels * g.out_channels > kMaxPixelConvMacs)
    return "larger than a pixel conv runs on one thread";
  // One pixel: NCHW and NHWC are the same memory when the samples are dense.
  if (call.input.stride(1) != 1 || (g.batch > 1 && call.input.stride(0) != g.in_channels))
    return "input channels not contiguous";
  if (call.weight.stride(1) != 1) return "weight's input channels not contiguous";
  const Tensor& r = call.post.residual;
  if (r.defined() && (r.stride(1) != 1 || (g.batch > 1 && r.stride(0) != g.out_channels)))
    return "residual channels not contiguous";
  return {};
}

#if REFOLD_HAVE_X86_KERNELS

// Σ_c w[c]·x[c] over 8 lanes, the last partial vector masked.
REFOLD_TARGET_AVX2 float dot(const float* w, const float* x, std::int64_t count) {
  __m256 acc = _mm256_setzero_ps();
  std::int64_t c = 0;
  for (; c + 8 <= count; c += 8)
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + c), _mm256_loadu_ps(x + c), acc);
  if (c < count) {
    const __m256i mask = tail_mask(count - c);
    acc = _mm256_fmadd_ps(_mm256_maskload_ps(w + c, mask), _mm256_maskload_ps(x + c, mask), acc);
  }
  const __m128 half = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
  const __m128 pair = _mm_add_ps(half, _mm_movehl_ps(half, half));
  return _mm_cvtss_f32(_mm_add_ss(pair, _mm_shuffle_ps(pair, pair, 1)));
}

REFOLD_TARGET_AVX2 void run(const float* x, const float* w, std::int64_t w_row, float* y,
                            std::int64_t batch, std::int64_t in, std::int64_t out,
                            const Epilogue& e) {
  for (std::int64_t n = 0; n < batch; ++n) {
    for (std::int64_t o = 0; o < out; ++o) y[n * out + o] = dot(w + o * w_row, x + n * in, in);
    finish_run(y + n * out, out, e, 0, n * out);  // bias, residual, activation, steps
  }
}

#endif

}  // namespace

Tensor pixel_conv2d(const Conv2dCall& call, std::string* declined) {
  constexpr const char* op = "conv2d: pixel conv";
  if (std::string why = decline_reason(call); !why.empty())
    return decline(op, std::move(why), declined);
#if REFOLD_HAVE_X86_KERNELS
  const reference::detail::Conv2dGeometry& g = call.geometry;
  const ConvEpilogue epilogue(call.bias, g.out_channels, call.post);
  Tensor y =
      empty({g.batch, g.out_channels, 1, 1},
            {DType::Float32, reference::detail::conv_output_format(call.input, call.weight)});
  run(call.input.data<float>(), call.weight.data<float>(), call.weight.stride(0), y.data<float>(),
      g.batch, g.in_channels, g.out_channels, epilogue.get());
  return y;
#else
  return decline(op, "built without x86 kernels", declined);
#endif
}

}  // namespace refold::native
