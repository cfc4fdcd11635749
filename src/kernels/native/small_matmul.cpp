// native/small_matmul.h.
#include "kernels/native/small_matmul.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/native/cpu.h"
#include "kernels/native/decline.h"
#include "kernels/native/micro_kernel.h"
#include "kernels/native/row_threads.h"
#include "kernels/native/thread_scratch.h"
#include "kernels/reference/typed_elements.h"

namespace refold::native {
namespace {

struct Problem {
  std::int64_t m = 0, k = 0, n = 0;
  std::int64_t a_row = 0, a_col = 0;  // a's strides along M and K
  std::int64_t b_row = 0, b_col = 0;  // b's strides along K and N
  float alpha = 1.0f;
};

std::int64_t padded_columns(std::int64_t n) { return (n + 7) / 8 * 8; }

// alpha · b [K, N] (b[k][n] at b + k·b_row + n·b_col) as the micro-kernel's blocks: block j
// holds columns 16j… (16 wide, the last 8 wide when N rounded up to 8 ends there) as
// [K][width], zeros past N.
void pack_b(const float* b, std::int64_t k, std::int64_t n, std::int64_t b_row, std::int64_t b_col,
            float alpha, float* packed) {
  const std::int64_t padded_n = padded_columns(n);
  for (std::int64_t j0 = 0; j0 < padded_n; j0 += kBlockWidth) {
    const std::int64_t width = std::min(kBlockWidth, padded_n - j0);
    const std::int64_t live = std::min(width, n - j0);
    float* block = packed + j0 * k;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const float* row = b + kk * b_row + j0 * b_col;
      float* out = block + kk * width;
      if (b_col == 1) {
        for (std::int64_t c = 0; c < live; ++c) out[c] = alpha * row[c];
      } else {
        for (std::int64_t c = 0; c < live; ++c) out[c] = alpha * row[c * b_col];
      }
      std::fill(out + live, out + width, 0.0f);
    }
  }
}

// y [M, N] (row stride ldy) = a · B + bias, a's M rows `lda` apart with K in unit stride, B
// packed by pack_b, bias [N] or null. Rows × 32-column panels run through multiply_panel
// straight into y, but for a last panel that ends past N (N not a multiple of 8), which lands in
// `scratch` (M · kPanelWidth floats) and is copied out.
void multiply_blocks(const float* a, std::int64_t lda, std::int64_t m, const float* packed,
                     std::int64_t k, std::int64_t n, const float* bias, float* y, std::int64_t ldy,
                     float* scratch) {
  const std::int64_t padded_n = padded_columns(n);
  Epilogue epilogue;
  epilogue.bias = bias;
  const float* rows[kPanelRows];
  Panel panel;
  panel.a = rows;
  panel.depth = k;
  panel.epilogue = bias != nullptr ? &epilogue : nullptr;
  for (std::int64_t o0 = 0; o0 < padded_n; o0 += kPanelWidth) {
    panel.b = packed + o0 * k;
    panel.width = std::min(kPanelWidth, padded_n - o0);
    panel.channel = o0;
    const std::int64_t live = std::min(panel.width, n - o0);
    const bool in_place = live == panel.width;
    float* c = in_place ? y + o0 : scratch;
    panel.ldc = in_place ? ldy : panel.width;
    for (std::int64_t m0 = 0; m0 < m; m0 += kPanelRows) {
      panel.rows = std::min(kPanelRows, m - m0);
      for (std::int64_t r = 0; r < panel.rows; ++r) rows[r] = a + (m0 + r) * lda;
      panel.c = c + m0 * panel.ldc;
      multiply_panel(panel);
    }
    if (in_place) continue;
    for (std::int64_t r = 0; r < m; ++r)
      std::copy(c + r * panel.width, c + r * panel.width + live, y + r * ldy + o0);
  }
}

// y = a · (alpha · b) for one matrix, y contiguous [M, N].
void multiply_one(const float* a, const float* b, float* y, const Problem& p) {
  const std::int64_t padded_n = padded_columns(p.n);
  const bool a_in_place = p.a_col == 1 || p.k == 1;
  // thread_scratch: packed b, then a's rows (when k is not their unit stride), then the last
  // column panel (when N is not a multiple of 8).
  float* packed = thread_scratch(
      static_cast<std::size_t>(padded_n * p.k + (a_in_place ? 0 : p.m * p.k) + p.m * kPanelWidth));
  pack_b(b, p.k, p.n, p.b_row, p.b_col, p.alpha, packed);
  const float* rows_base = a;
  std::int64_t lda = p.a_row;
  float* next = packed + padded_n * p.k;
  if (!a_in_place) {
    for (std::int64_t m = 0; m < p.m; ++m)
      for (std::int64_t k = 0; k < p.k; ++k) next[m * p.k + k] = a[m * p.a_row + k * p.a_col];
    rows_base = next;
    lda = p.k;
    next += p.m * p.k;
  }
  multiply_blocks(rows_base, lda, p.m, packed, p.k, p.n, nullptr, y, p.n, next);
}

}  // namespace

Tensor small_matmul(const Tensor& a, const Tensor& b, float alpha, std::string* declined,
                    std::int64_t max_flops) {
  constexpr const char* name = "matmul";
  if (!cpu_has_avx2_fma()) return decline(name, "needs AVX2 and FMA", declined);
  if (!a.defined() || !b.defined() || a.dtype() != DType::Float32 || b.dtype() != DType::Float32)
    return decline(name, "not two float32 operands", declined);
  if (a.dim() < 2 || b.dim() < 2 || a.size(-1) != b.size(-2))
    return decline(name, "not [..., M, K] · [..., K, N]", declined);
  Problem p;
  p.m = a.size(-2), p.k = a.size(-1), p.n = b.size(-1);
  // Packing b costs K·N copies, 1/M of the product; a row-major a's pack M·K, 1/N of it. Below
  // a full panel of rows or one 8-lane column the copies weigh like the product (a class
  // token's attention, CaiT and CrossViT: M = 1; a global-context pool, GCNet: N = 1).
  if (p.m < kPanelRows || p.n < 8)
    return decline(
        name,
        fmt::format("[{}, {}] · [{}, {}]: fewer than 6 rows or 8 columns", p.m, p.k, p.k, p.n),
        declined);
  p.a_row = a.stride(-2), p.a_col = a.stride(-1), p.b_row = b.stride(-2), p.b_col = b.stride(-1);
  p.alpha = alpha;
  const Shape a_batch(a.sizes().begin(), a.sizes().end() - 2);
  const Shape b_batch(b.sizes().begin(), b.sizes().end() - 2);
  const Shape batch = reference::detail::broadcast_shapes({a_batch, b_batch}, "MatMul");
  // In double: a huge product's sizes overflow int64 before its count is compared.
  double flops = static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  for (std::int64_t size : batch) flops *= static_cast<double>(size);
  if (flops == 0) return decline(name, "no elements", declined);
  if (flops > static_cast<double>(max_flops))
    return decline(
        name, fmt::format("{:.0f} multiply-adds, past the {} of a small product", flops, max_flops),
        declined);
  std::int64_t matrices = 1;
  for (std::int64_t size : batch) matrices *= size;

  Shape out_sizes = batch;
  out_sizes.insert(out_sizes.end(), {p.m, p.n});
  Tensor y = empty(out_sizes, DType::Float32);
  // Matrix i (y contiguous, batch index row-major): a's and b's offsets through their batch
  // strides, 0 along a broadcast dim.
  struct BatchDim {
    std::int64_t size, a_stride, b_stride;
  };
  std::vector<BatchDim> dims(batch.size());
  for (std::size_t d = 0; d < batch.size(); ++d) {
    auto stride = [&](const Tensor& t) {
      const auto td = static_cast<std::int64_t>(d + t.dim() - 2) -
                      static_cast<std::int64_t>(batch.size());  // t's dim aligned with d
      return td < 0 || t.size(td) == 1 ? 0 : t.stride(td);
    };
    dims[d] = {batch[d], stride(a), stride(b)};
  }
  const float* a_base = a.data<float>();
  const float* b_base = b.data<float>();
  float* y_base = y.data<float>();
  const auto run = [&](std::int64_t i) {
    std::int64_t a_offset = 0, b_offset = 0;
    for (std::int64_t d = static_cast<std::int64_t>(dims.size()) - 1, rest = i; d >= 0; --d) {
      const BatchDim& bd = dims[static_cast<std::size_t>(d)];
      const std::int64_t index = rest % bd.size;
      rest /= bd.size;
      a_offset += index * bd.a_stride;
      b_offset += index * bd.b_stride;
    }
    multiply_one(a_base + a_offset, b_base + b_offset, y_base + i * p.m * p.n, p);
  };
  const int threads =
      matrices < 2 ? 1 : threads_from(static_cast<std::int64_t>(flops), kSmallMatmulFlops / 8);
  if (threads == 1) {
    for (std::int64_t i = 0; i < matrices; ++i) run(i);
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t i = 0; i < matrices; ++i) run(i);
  }
  return y;
}

PackedMatrix::PackedMatrix(const float* b, std::int64_t k, std::int64_t n, std::int64_t row_stride,
                           std::int64_t col_stride)
    : k_(k), n_(n), blocks_(static_cast<std::size_t>(padded_columns(n) * k)) {
  pack_b(b, k, n, row_stride, col_stride, 1.0f, blocks_.data());
}

void multiply_packed(const float* a, std::int64_t m, std::int64_t lda, const PackedMatrix& b,
                     const float* bias, float* y, std::int64_t ldy) {
  // The epilogue reads the bias 8 columns at a time: past N it reads zeros from a padded copy.
  const std::int64_t padded_n = padded_columns(b.n());
  float* scratch = thread_scratch(static_cast<std::size_t>(m * kPanelWidth + padded_n));
  float* padded_bias = nullptr;
  if (bias != nullptr) {
    padded_bias = scratch + m * kPanelWidth;
    std::copy(bias, bias + b.n(), padded_bias);
    std::fill(padded_bias + b.n(), padded_bias + padded_n, 0.0f);
  }
  multiply_blocks(a, lda, m, b.blocks(), b.k(), b.n(), padded_bias, y, ldy, scratch);
}

}  // namespace refold::native
