// native/elementwise_chain.h.
#include "kernels/native/elementwise_chain.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/native/bfloat16_boundary.h"
#include "kernels/native/conv_rules.h"
#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/epilogue.h"
#include "kernels/post_ops.h"
#include "refold/threads.h"

namespace refold::native {
namespace {

constexpr std::int64_t kLanes = 8;
constexpr std::size_t kMaxSteps = 16;  // per-plane broadcast buffers (NCHW) are on the stack

#if REFOLD_HAVE_X86_KERNELS

// `count` (≤ 8) elements from `x` (and the residual at `r`) through the epilogue, via lane
// buffers so that a tail reads and writes only its own elements.
REFOLD_TARGET_AVX2 void finish_tail(const float* x, const float* r, float* y, std::int64_t count,
                                    Epilogue e, std::int64_t channel) {
  alignas(32) float lanes[kLanes] = {};
  alignas(32) float residual[kLanes] = {};
  std::memcpy(lanes, x, sizeof(float) * count);
  if (r != nullptr) std::memcpy(residual, r, sizeof(float) * count);
  e.residual = r != nullptr ? residual : nullptr;
  const __m256 v = finish(_mm256_load_ps(lanes), e, channel, 0);
  _mm256_store_ps(lanes, v);
  std::memcpy(y, lanes, sizeof(float) * count);
}

// NHWC: each pixel's C channels are contiguous; channel c's values sit at c in every row. The
// row is copied, then run through the chain in place (finish_run).
REFOLD_TARGET_AVX2 void nhwc_pixel(const float* x, float* y, std::int64_t p, std::int64_t channels,
                                   const Epilogue& e) {
  const std::int64_t row = p * channels;
  if (x != y) std::memcpy(y + row, x + row, sizeof(float) * static_cast<std::size_t>(channels));
  finish_run(y + row, channels, e, 0, row);
}

// NCHW: each (n, c) plane of H·W elements shares one channel's values, broadcast to 8 lanes.
REFOLD_TARGET_AVX2 void nchw_plane(const float* x, const float* r, float* y, std::int64_t plane,
                                   std::int64_t channels, std::int64_t plane_size,
                                   const Epilogue& e) {
  const std::int64_t c = plane % channels;
  alignas(32) float values[kMaxSteps][2][kLanes];
  EpilogueStep steps[kMaxSteps];
  Epilogue local = e;
  for (int s = 0; s < e.step_count; ++s) {
    steps[s] = e.steps[s];
    if (steps[s].scale != nullptr) {
      std::fill_n(values[s][0], kLanes, steps[s].scale[c]);
      steps[s].scale = values[s][0];
    }
    if (steps[s].shift != nullptr) {
      std::fill_n(values[s][1], kLanes, steps[s].shift[c]);
      steps[s].shift = values[s][1];
    }
  }
  local.steps = steps;
  const std::int64_t base = plane * plane_size;
  local.residual = r != nullptr ? r + base : nullptr;
  std::int64_t i = 0;
  for (; i + kLanes <= plane_size; i += kLanes) {
    _mm256_storeu_ps(y + base + i, finish(_mm256_loadu_ps(x + base + i), local, 0, i));
  }
  if (i < plane_size) {
    finish_tail(x + base + i, local.residual != nullptr ? local.residual + i : nullptr,
                y + base + i, plane_size - i, local, 0);
  }
}

// A channel concat through the chain, NHWC: pixel p's output row is the inputs' rows side by
// side, input k's channels at offset o_k, so channel o_k + c takes the chain's values at o_k + c.
// The row is assembled, then run through the chain in place (finish_run).
REFOLD_TARGET_AVX2 void concat_pixel(const std::vector<const float*>& in,
                                     const std::vector<std::int64_t>& widths, float* y,
                                     std::int64_t p, std::int64_t channels, const Epilogue& e) {
  float* out = y + p * channels;
  std::int64_t o = 0;
  for (std::size_t k = 0; k < in.size(); ++k) {
    std::memcpy(out + o, in[k] + p * widths[k],
                sizeof(float) * static_cast<std::size_t>(widths[k]));
    o += widths[k];
  }
  finish_run(out, channels, e, 0, 0);
}

void run_concat_nhwc(const std::vector<const float*>& in, const std::vector<std::int64_t>& widths,
                     float* y, std::int64_t pixels, std::int64_t channels, const Epilogue& e,
                     int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (pixels > 1)
  for (std::int64_t p = 0; p < pixels; ++p) concat_pixel(in, widths, y, p, channels, e);
}

// The parallel loops stay outside the AVX2 functions: clang outlines an OpenMP region into a
// function without their target attribute.
void run_nhwc(const float* x, float* y, std::int64_t pixels, std::int64_t channels,
              const Epilogue& e, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (pixels > 1)
  for (std::int64_t p = 0; p < pixels; ++p) nhwc_pixel(x, y, p, channels, e);
}

void run_nchw(const float* x, const float* r, float* y, std::int64_t planes, std::int64_t channels,
              std::int64_t plane_size, const Epilogue& e, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads) if (planes > 1)
  for (std::int64_t plane = 0; plane < planes; ++plane)
    nchw_plane(x, r, y, plane, channels, plane_size, e);
}

#endif

}  // namespace

Tensor elementwise_chain(const Tensor& x, const PostOps& post, std::string* declined) {
  constexpr const char* op = "elementwise_chain";
  REFOLD_CHECK(x.defined(), "{}: the input is undefined", op);
  check_post_ops(op, post, x.sizes(), x.dtype());
  if (!cpu_has_avx2_fma()) return decline(op, "needs AVX2 and FMA", declined);
  if (x.dtype() == DType::BFloat16) {
    PostOps wide = post;
    wide.residual = widened(post.residual);
    return rounded(elementwise_chain(widened(x), wide, declined));
  }
  if (x.dtype() != DType::Float32) return decline(op, "float32 only", declined);
  if (x.dim() != 4) return decline(op, "4-d tensors only", declined);
  if (x.numel() == 0) return decline(op, "no elements", declined);
  if (post.then.size() > kMaxSteps)
    return decline(op, fmt::format("more than {} steps", kMaxSteps), declined);
  const bool nhwc = x.is_contiguous(MemoryFormat::ChannelsLast) && !x.is_contiguous();
  const MemoryFormat layout = nhwc ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous;
  if (!x.is_contiguous(layout)) return decline(op, "input neither NCHW nor NHWC", declined);
  if (post.residual.defined() && !post.residual.is_contiguous(layout))
    return decline(op, "the residual is not in the input's layout", declined);
#if REFOLD_HAVE_X86_KERNELS
  const std::int64_t channels = x.size(1);
  const ConvEpilogue epilogue(Tensor{}, channels, post);
  Tensor y = empty(x.sizes(), {DType::Float32, layout});
  const float* r = post.residual.defined() ? post.residual.data<float>() : nullptr;
  const int threads = get_num_threads();
  if (nhwc) {
    run_nhwc(x.data<float>(), y.data<float>(), x.numel() / channels, channels, epilogue.get(),
             threads);
  } else {
    run_nchw(x.data<float>(), r, y.data<float>(), x.size(0) * channels, channels,
             x.size(2) * x.size(3), epilogue.get(), threads);
  }
  return y;
#else
  return decline(op, "built without x86 kernels", declined);
#endif
}

Tensor concat_chain(const std::vector<Tensor>& inputs, const PostOps& post, std::string* declined) {
  constexpr const char* op = "concat_chain";
  if (post.residual.defined() || post.residual_in_steps())
    return decline(op, "a residual", declined);
  if (inputs.empty()) return decline(op, "no inputs", declined);
  if (!cpu_has_avx2_fma()) return decline(op, "needs AVX2 and FMA", declined);
  if (post.then.size() > kMaxSteps)
    return decline(op, fmt::format("more than {} steps", kMaxSteps), declined);
  if (std::any_of(inputs.begin(), inputs.end(),
                  [](const Tensor& t) { return t.defined() && t.dtype() == DType::BFloat16; })) {
    std::vector<Tensor> wide;
    for (const Tensor& t : inputs) wide.push_back(widened(t));
    return rounded(concat_chain(wide, post, declined));
  }
  const Tensor& head = inputs[0];
  std::int64_t channels = 0;
  for (const Tensor& t : inputs) {
    if (!t.defined() || t.dtype() != DType::Float32 || t.dim() != 4)
      return decline(op, "float32 4-d inputs only", declined);
    if (t.size(0) != head.size(0) || t.size(2) != head.size(2) || t.size(3) != head.size(3))
      return decline(op, "inputs differ outside the channels", declined);  // the reference says how
    if (!t.is_contiguous(MemoryFormat::ChannelsLast))
      return decline(op, "an input not channels_last", declined);
    channels += t.size(1);
  }
  const std::int64_t pixels = head.size(0) * head.size(2) * head.size(3);
  if (pixels == 0 || channels == 0) return decline(op, "no elements", declined);
  check_post_ops(op, post, {head.size(0), channels, head.size(2), head.size(3)}, DType::Float32);
#if REFOLD_HAVE_X86_KERNELS
  const ConvEpilogue epilogue(Tensor{}, channels, post);
  Tensor y =
      empty({head.size(0), channels, head.size(2), head.size(3)}, MemoryFormat::ChannelsLast);
  std::vector<const float*> in;
  std::vector<std::int64_t> widths;
  for (const Tensor& t : inputs) {
    in.push_back(t.data<float>());
    widths.push_back(t.size(1));
  }
  run_concat_nhwc(in, widths, y.data<float>(), pixels, channels, epilogue.get(), get_num_threads());
  return y;
#else
  return decline(op, "built without x86 kernels", declined);
#endif
}

}  // namespace refold::native
