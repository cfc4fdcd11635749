// Reference expand, where, compare (Equal, Less, …, And, Or, Xor), Not, cast, range and
// constant_of_shape: exact for every dtype (see tensor_ops.h; booleans are int64 0/1); ONNX's
// quantize_linear / dequantize_linear (quantize.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/reference/quantize.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace {

using detail::broadcast_strides;
using detail::offset_in;
using detail::visit_storage_type;

// The layout an element-wise result of `sizes` takes from `like`: channels_last when both are
// 4-d of the same sizes and `like` suggests it, else contiguous.
Tensor empty_following(const Tensor& like, const Shape& sizes, DType dtype) {
  const bool channels_last = like.dim() == 4 && like.sizes() == sizes &&
                             like.suggest_memory_format() == MemoryFormat::ChannelsLast;
  return empty(sizes,
               {dtype, channels_last ? MemoryFormat::ChannelsLast : MemoryFormat::Contiguous});
}

void check_defined(const Tensor& t, const char* op, const char* name) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", op, name);
}

}  // namespace

Tensor expand(const Tensor& input, const Shape& shape) {
  check_defined(input, "expand", "input");
  for (std::int64_t s : shape)
    REFOLD_CHECK(s >= 0, "expand: negative size {} in shape [{}]", s, fmt::join(shape, ", "));
  const Shape sizes = detail::broadcast_shapes({input.sizes(), shape}, "expand");
  checked_mul(checked_numel(sizes, "expand"), static_cast<std::int64_t>(input.element_size()),
              "expand");
  // The input seen with stride 0 along broadcast dimensions, copied.
  Tensor output = empty(sizes, input.dtype());
  output.copy_(input.as_strided(sizes, broadcast_strides(input, sizes), input.storage_offset()));
  return output;
}

Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y) {
  check_defined(condition, "where", "condition");
  check_defined(x, "where", "x");
  check_defined(y, "where", "y");
  REFOLD_CHECK(x.dtype() == y.dtype(), "where: x has dtype {} but y has {}", dtype_name(x.dtype()),
               dtype_name(y.dtype()));
  const Shape sizes = detail::broadcast_shapes({condition.sizes(), x.sizes(), y.sizes()}, "where");
  // Layout: the first input that has the output's sizes (the layout plan's FirstInput rule).
  Tensor output = empty_following(condition.sizes() == sizes ? condition : x, sizes, x.dtype());
  const Shape cs = broadcast_strides(condition, sizes);
  const Shape xs = broadcast_strides(x, sizes);
  const Shape ys = broadcast_strides(y, sizes);
  const void* c = condition.data_ptr();
  const DType cd = condition.dtype();
  visit_storage_type(x.dtype(), [&]<typename T>(T) {
    const T* a = static_cast<const T*>(x.data_ptr());
    const T* b = static_cast<const T*>(y.data_ptr());
    T* out = static_cast<T*>(output.data_ptr());
    for_each_index(sizes, [&](const Shape& idx) {
      // A bool is int64 0/1; a float condition is true when ≠ 0 (NaN is true, as in numpy).
      const bool take_x = cd == DType::Int64
                              ? static_cast<const std::int64_t*>(c)[offset_in(idx, cs)] != 0
                              : load_as_float(c, cd, offset_in(idx, cs)) != 0.0f;
      out[offset_in(idx, output.strides())] =
          take_x ? a[offset_in(idx, xs)] : b[offset_in(idx, ys)];
    });
  });
  return output;
}

const char* compare_name(CompareOp op) {
  static constexpr const char* names[] = {"Equal",          "Less", "Greater", "LessOrEqual",
                                          "GreaterOrEqual", "And",  "Or",      "Xor"};
  return names[static_cast<int>(op)];
}

namespace {

template <typename T>
bool compare_values(CompareOp op, T x, T y) {
  switch (op) {
    case CompareOp::Equal:
      return x == y;
    case CompareOp::Less:
      return x < y;
    case CompareOp::Greater:
      return x > y;
    case CompareOp::LessOrEqual:
      return x <= y;
    case CompareOp::GreaterOrEqual:
      return x >= y;
    case CompareOp::And:
      return x != 0 && y != 0;
    case CompareOp::Or:
      return x != 0 || y != 0;
    case CompareOp::Xor:
      return (x != 0) != (y != 0);
  }
  return false;
}

}  // namespace

Tensor compare(const Tensor& a, const Tensor& b, CompareOp op) {
  const char* name = compare_name(op);
  check_defined(a, name, "A");
  check_defined(b, name, "B");
  REFOLD_CHECK(a.dtype() == b.dtype(), "{}: inputs have dtypes {} and {}; they must match", name,
               dtype_name(a.dtype()), dtype_name(b.dtype()));
  const Shape sizes = detail::broadcast_shapes({a.sizes(), b.sizes()}, name);
  Tensor output = empty_following(a, sizes, DType::Int64);
  const Shape as = broadcast_strides(a, sizes);
  const Shape bs = broadcast_strides(b, sizes);
  const Shape& os = output.strides();
  auto* out = output.data<std::int64_t>();
  if (a.dtype() == DType::Int64) {
    const auto* pa = a.data<std::int64_t>();
    const auto* pb = b.data<std::int64_t>();
    for_each_index(sizes, [&](const Shape& idx) {
      out[offset_in(idx, os)] = compare_values(op, pa[offset_in(idx, as)], pb[offset_in(idx, bs)]);
    });
    return output;
  }
  // float32 and bfloat16 compare exactly as floats (NaN compares false, −0 == +0).
  const void* pa = a.data_ptr();
  const void* pb = b.data_ptr();
  for_each_index(sizes, [&](const Shape& idx) {
    out[offset_in(idx, os)] = compare_values(op, load_as_float(pa, a.dtype(), offset_in(idx, as)),
                                             load_as_float(pb, b.dtype(), offset_in(idx, bs)));
  });
  return output;
}

Tensor logical_not(const Tensor& x) {
  check_defined(x, "Not", "X");
  REFOLD_CHECK(x.dtype() == DType::Int64, "Not: X has dtype {}; expected bool (int64 0/1)",
               dtype_name(x.dtype()));
  Tensor output = empty_following(x, x.sizes(), DType::Int64);
  const auto* in = x.data<std::int64_t>();
  auto* out = output.data<std::int64_t>();
  for_each_index(x.sizes(), [&](const Shape& idx) {
    out[offset_in(idx, output.strides())] = in[offset_in(idx, x.strides())] == 0 ? 1 : 0;
  });
  return output;
}

namespace {

// 1 where `test` holds for x's element (read as float; an int64 x is never NaN or Inf).
template <typename Test>
Tensor classify(const Tensor& x, const char* op, Test&& test) {
  check_defined(x, op, "X");
  Tensor output = empty_following(x, x.sizes(), DType::Int64);
  auto* out = output.data<std::int64_t>();
  const bool integer = x.dtype() == DType::Int64;
  const FloatReader in(x);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    out[offset_in(idx, output.strides())] =
        !integer && test(in.at_offset(offset_in(idx, x.strides()))) ? 1 : 0;
  });
  return output;
}

}  // namespace

Tensor is_nan(const Tensor& x) {
  return classify(x, "IsNaN", [](float v) { return std::isnan(v); });
}

Tensor is_inf(const Tensor& x, bool negative, bool positive) {
  return classify(x, "IsInf", [&](float v) {
    return std::isinf(v) && ((v > 0 && positive) || (v < 0 && negative));
  });
}

namespace {

// float → integer: truncation toward zero, refused outside [lo, hi] (and for NaN/±Inf), since
// C++ leaves such conversions undefined and ONNX leaves them implementation-defined.
std::int64_t float_to_integer(double v, double lo, double hi, const char* target) {
  REFOLD_CHECK(std::isfinite(v) && std::trunc(v) >= lo && std::trunc(v) <= hi,
               "cast: value {} does not fit {}", v, target);
  return static_cast<std::int64_t>(std::trunc(v));
}

}  // namespace

std::optional<CastTarget> cast_target_of(std::int64_t onnx_type) {
  switch (onnx_type) {
    case 1:
      return CastTarget::Float32;
    case 16:
      return CastTarget::BFloat16;
    case 7:
      return CastTarget::Int64;
    case 6:
      return CastTarget::Int32;
    case 9:
      return CastTarget::Bool;
    default:
      return std::nullopt;
  }
}

DType storage_dtype(CastTarget target) {
  return target == CastTarget::Float32    ? DType::Float32
         : target == CastTarget::BFloat16 ? DType::BFloat16
                                          : DType::Int64;
}

Tensor cast(const Tensor& input, CastTarget target) {
  check_defined(input, "cast", "input");
  const DType from = input.dtype();
  if (target == CastTarget::Float32 || target == CastTarget::BFloat16) {
    const DType to = storage_dtype(target);
    if (from != DType::Int64) return input.to(to);
    Tensor output = empty_following(input, input.sizes(), to);
    const auto* in = input.data<std::int64_t>();
    void* out = output.data_ptr();
    for_each_index(input.sizes(), [&](const Shape& idx) {
      store_from_float(
          out, to, offset_in(idx, output.strides()),
          round_to_dtype(static_cast<double>(in[offset_in(idx, input.strides())]), to));
    });
    return output;
  }
  // Integer targets, all stored as int64.
  Tensor output = empty_following(input, input.sizes(), DType::Int64);
  auto* out = output.data<std::int64_t>();
  constexpr double kI64Lo = -9223372036854775808.0;  // −2^63; 2^63 itself does not fit
  constexpr double kI64Hi = 9223372036854774784.0;   // the largest double below 2^63
  constexpr double kI32Lo = -2147483648.0, kI32Hi = 2147483647.0;
  const void* in = input.data_ptr();
  for_each_index(input.sizes(), [&](const Shape& idx) {
    const std::int64_t src = offset_in(idx, input.strides());
    std::int64_t v = 0;
    if (from == DType::Int64) {
      const std::int64_t x = static_cast<const std::int64_t*>(in)[src];
      switch (target) {
        case CastTarget::Bool:
          v = x != 0;
          break;
        case CastTarget::Int32:  // two's complement wrap to 32 bits
          v = static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(x)));
          break;
        default:
          v = x;
      }
    } else {
      const double x = load_as_float(in, from, src);
      switch (target) {
        case CastTarget::Bool:
          v = x != 0;  // NaN → true
          break;
        case CastTarget::Int32:
          v = float_to_integer(x, kI32Lo, kI32Hi, "int32");
          break;
        default:
          v = float_to_integer(x, kI64Lo, kI64Hi, "int64");
      }
    }
    out[offset_in(idx, output.strides())] = v;
  });
  return output;
}

Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  for (const auto& [t, name] : {std::pair{&start, "start"}, {&limit, "limit"}, {&delta, "delta"}}) {
    check_defined(*t, "range", name);
    REFOLD_CHECK(t->numel() == 1 && t->dim() <= 1, "range: {} must be a scalar, got shape [{}]",
                 name, fmt::join(t->sizes(), ", "));
    REFOLD_CHECK(t->dtype() == start.dtype(), "range: {} has dtype {} but start has {}", name,
                 dtype_name(t->dtype()), dtype_name(start.dtype()));
  }
  if (start.dtype() == DType::Int64) {
    const std::int64_t s = start.data<std::int64_t>()[0], l = limit.data<std::int64_t>()[0],
                       d = delta.data<std::int64_t>()[0];
    REFOLD_CHECK(d != 0, "range: delta must not be 0");
    std::int64_t span = 0;
    REFOLD_CHECK(!__builtin_sub_overflow(l, s, &span), "range: limit {} − start {} overflows", l,
                 s);
    // count = max(ceil(span / d), 0), without the overflow of span + d − 1.
    std::int64_t count = 0;
    if ((span > 0 && d > 0) || (span < 0 && d < 0)) count = span / d + (span % d != 0 ? 1 : 0);
    checked_mul(count, 8, "range");
    Tensor output = empty({count}, DType::Int64);
    auto* out = output.data<std::int64_t>();
    for (std::int64_t k = 0; k < count; ++k) out[k] = s + k * d;  // stays within [s, l)
    return output;
  }
  // Float: computed in the dtype, as numpy.arange and the ONNX reference do.
  const double s = start.item(), l = limit.item(), d = delta.item();
  REFOLD_CHECK(std::isfinite(s) && std::isfinite(l) && std::isfinite(d),
               "range: start {}, limit {} and delta {} must be finite", s, l, d);
  REFOLD_CHECK(d != 0, "range: delta must not be 0");
  const double n = std::max(std::ceil((l - s) / d), 0.0);
  REFOLD_CHECK(n < 9.0e15, "range: {} elements (start {}, limit {}, delta {}) is too many", n, s, l,
               d);
  const auto count = static_cast<std::int64_t>(n);
  Tensor output = empty({count}, start.dtype());
  void* out = output.data_ptr();
  const auto fs = static_cast<float>(s), fd = static_cast<float>(d);
  for (std::int64_t k = 0; k < count; ++k)
    store_from_float(out, start.dtype(), k,
                     round_to_dtype(fs + static_cast<float>(k) * fd, start.dtype()));
  return output;
}

Tensor constant_of_shape(const Shape& shape, const Tensor& value) {
  check_defined(value, "constant_of_shape", "value");
  REFOLD_CHECK(value.numel() == 1, "constant_of_shape: value must hold one element, got [{}]",
               fmt::join(value.sizes(), ", "));
  for (std::int64_t s : shape)
    REFOLD_CHECK(s >= 0, "constant_of_shape: negative size {} in shape [{}]", s,
                 fmt::join(shape, ", "));
  checked_mul(checked_numel(shape, "constant_of_shape"),
              static_cast<std::int64_t>(value.element_size()), "constant_of_shape");
  Tensor output = empty(shape, value.dtype());
  visit_storage_type(value.dtype(), [&]<typename T>(T) {
    const T v = static_cast<const T*>(value.data_ptr())[0];
    T* out = static_cast<T*>(output.data_ptr());
    std::fill(out, out + output.numel(), v);
  });
  return output;
}

}  // namespace refold::reference

namespace refold::reference {
namespace {

// Maps x's logical index to the element of scale (contiguous, row-major) it uses.
class QuantParamIndex {
 public:
  QuantParamIndex(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                  const QuantAxis& q, const char* op)
      : q_(q) {
    check_defined(x, op, "x");
    check_defined(scale, op, "scale");
    REFOLD_CHECK(is_floating(scale.dtype()), "{}: scale has dtype {}; expected float32", op,
                 dtype_name(scale.dtype()));
    if (zero_point.defined()) {
      REFOLD_CHECK(zero_point.dtype() == DType::Int64,
                   "{}: zero_point has dtype {}; expected an "
                   "integer type",
                   op, dtype_name(zero_point.dtype()));
      // One value either way ([] or [1], as ORT's quantizer writes a bias's) is per-tensor.
      REFOLD_CHECK(
          zero_point.sizes() == scale.sizes() || (zero_point.numel() == 1 && scale.numel() == 1 &&
                                                  scale.dim() <= 1 && zero_point.dim() <= 1),
          "{}: zero_point has shape [{}] but scale has [{}]", op,
          fmt::join(zero_point.sizes(), ", "), fmt::join(scale.sizes(), ", "));
    }
    const std::int64_t rank = x.dim();
    if (q.axis < 0) {
      REFOLD_CHECK(scale.numel() == 1,
                   "{}: a per-tensor scale must have one element, got shape [{}]", op,
                   fmt::join(scale.sizes(), ", "));
      return;
    }
    REFOLD_CHECK(q.axis < rank, "{}: axis {} is out of range for x of rank {}", op, q.axis, rank);
    const std::int64_t n = x.size(q.axis);
    if (q.block_size == 0) {
      REFOLD_CHECK(scale.dim() == 1 && scale.size(0) == n,
                   "{}: a per-axis scale must be 1-d of x's size {} along axis {}, got shape [{}]",
                   op, n, q.axis, fmt::join(scale.sizes(), ", "));
      return;
    }
    Shape expected = x.sizes();
    expected[q.axis] = (n + q.block_size - 1) / q.block_size;
    REFOLD_CHECK(scale.sizes() == expected,
                 "{}: a blocked scale (block_size {}) must have shape [{}], got [{}]", op,
                 q.block_size, fmt::join(expected, ", "), fmt::join(scale.sizes(), ", "));
    strides_.assign(expected.size(), 1);
    for (std::size_t d = expected.size(); d-- > 1;) strides_[d - 1] = strides_[d] * expected[d];
  }

  std::int64_t operator()(const Shape& idx) const {
    if (q_.axis < 0) return 0;
    if (q_.block_size == 0) return idx[q_.axis];
    std::int64_t off = 0;
    for (std::size_t d = 0; d < idx.size(); ++d) {
      const std::int64_t i =
          static_cast<std::int64_t>(d) == q_.axis ? idx[d] / q_.block_size : idx[d];
      off += i * strides_[d];
    }
    return off;
  }

 private:
  QuantAxis q_;
  Shape strides_;  // the blocked scale's contiguous strides
};

std::vector<std::int64_t> zero_points(const Tensor& zero_point, std::int64_t n) {
  if (!zero_point.defined()) return std::vector<std::int64_t>(n, 0);
  return detail::int64_values(zero_point);
}

}  // namespace

// y = clamp(rint(float(x) / float(scale)) + zero_point, lo, hi); rint rounds half to even.
Tensor quantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                       const QuantAxis& axis, std::int64_t lo, std::int64_t hi) {
  const QuantParamIndex param(x, scale, zero_point, axis, "QuantizeLinear");
  REFOLD_CHECK(is_floating(x.dtype()), "QuantizeLinear: x has dtype {}; expected float32",
               dtype_name(x.dtype()));
  const std::vector<float> s = scale.contiguous().to_vector();
  const std::vector<std::int64_t> zp = zero_points(zero_point, scale.numel());
  Tensor output = empty_following(x, x.sizes(), DType::Int64);
  auto* out = output.data<std::int64_t>();
  const FloatReader in(x);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const std::int64_t p = param(idx);
    const float q = in.at_offset(offset_in(idx, x.strides())) / s[p];  // float32, as ONNX
    const double r = std::isnan(q) ? 0.0 : std::nearbyint(static_cast<double>(q));
    const double v = std::clamp(r + static_cast<double>(zp[p]), static_cast<double>(lo),
                                static_cast<double>(hi));
    out[offset_in(idx, output.strides())] = static_cast<std::int64_t>(v);
  });
  return output;
}

// y = (x − zero_point) · scale, the difference exact in int64, the product in double rounded
// once to scale's dtype.
Tensor dequantize_linear(const Tensor& x, const Tensor& scale, const Tensor& zero_point,
                         const QuantAxis& axis) {
  const QuantParamIndex param(x, scale, zero_point, axis, "DequantizeLinear");
  REFOLD_CHECK(x.dtype() == DType::Int64,
               "DequantizeLinear: x has dtype {}; expected an integer type", dtype_name(x.dtype()));
  const std::vector<float> s = scale.contiguous().to_vector();
  const std::vector<std::int64_t> zp = zero_points(zero_point, scale.numel());
  Tensor output = empty_following(x, x.sizes(), scale.dtype());
  const FloatWriter out(output);
  const auto* in = static_cast<const std::int64_t*>(x.data_ptr());
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const std::int64_t p = param(idx);
    const double d = static_cast<double>(in[offset_in(idx, x.strides())] - zp[p]);
    out.set_offset(offset_in(idx, output.strides()),
                   static_cast<float>(d * static_cast<double>(s[p])));
  });
  return output;
}

}  // namespace refold::reference
