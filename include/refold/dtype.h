// Element types. Kernels compute in float32 and bfloat16; int64 holds PyTorch's
// `num_batches_tracked` and the integer values of ONNX graphs (shapes, indices; int32 and bool
// values are held as int64 too — src/ops/values.h).
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace refold {

enum class DType : std::uint8_t { Float32, BFloat16, Int64 };

std::string_view dtype_name(DType dtype);  // "float32", "bfloat16", "int64"
std::size_t element_size(DType dtype);
inline bool is_floating(DType dtype) { return dtype != DType::Int64; }

// bfloat16: the upper 16 bits of an IEEE float32 (1 sign, 8 exponent, 7 mantissa bits).
struct BFloat16 {
  std::uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float value) : bits(round_from_float(value)) {}
  explicit operator float() const { return std::bit_cast<float>(std::uint32_t{bits} << 16); }

  // Round to nearest, ties to even: add 0x7FFF plus the lowest kept bit, then truncate.
  // NaN is kept quiet (a NaN whose payload sits only in the dropped bits would round to Inf).
  static std::uint16_t round_from_float(float value) {
    const auto u = std::bit_cast<std::uint32_t>(value);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    const std::uint32_t lsb = (u >> 16) & 1u;
    return static_cast<std::uint16_t>((u + 0x7FFFu + lsb) >> 16);
  }
};
static_assert(sizeof(BFloat16) == 2);

}  // namespace refold
