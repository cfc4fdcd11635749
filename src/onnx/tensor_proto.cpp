#include "onnx/tensor_proto.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <optional>
#include <vector>

#include "core/check.h"
#include "core/checked_math.h"
#include "onnx/external_data.h"

namespace refold::onnx::detail {
namespace {

static_assert(std::endian::native == std::endian::little,
              "TensorProto raw_data is little-endian; refold assumes a little-endian host");

using TP = ::onnx::TensorProto;

// Where a data type's values live when they are not in raw_data.
enum class Field { Float, Int32, Int64, Uint64 };

struct TypeInfo {
  int bytes;  // element size in raw_data
  DType out;  // refold dtype it becomes
  Field field;
};

std::optional<TypeInfo> type_info(int data_type) {
  switch (data_type) {
    case TP::FLOAT:
      return TypeInfo{4, DType::Float32, Field::Float};
    case TP::FLOAT16:
      return TypeInfo{2, DType::Float32, Field::Int32};
    case TP::BFLOAT16:
      return TypeInfo{2, DType::Float32, Field::Int32};
    case TP::INT64:
      return TypeInfo{8, DType::Int64, Field::Int64};
    case TP::INT32:
      return TypeInfo{4, DType::Int64, Field::Int32};
    case TP::INT16:
      return TypeInfo{2, DType::Int64, Field::Int32};
    case TP::INT8:
      return TypeInfo{1, DType::Int64, Field::Int32};
    case TP::UINT8:
      return TypeInfo{1, DType::Int64, Field::Int32};
    case TP::UINT16:
      return TypeInfo{2, DType::Int64, Field::Int32};
    case TP::BOOL:
      return TypeInfo{1, DType::Int64, Field::Int32};
    case TP::UINT32:
      return TypeInfo{4, DType::Int64, Field::Uint64};
    case TP::UINT64:
      return TypeInfo{8, DType::Int64, Field::Uint64};
    default:
      return std::nullopt;
  }
}

// IEEE half → float32, exact: subnormal halves are m·2^-24, normal ones rebias the exponent
// (15 → 127) and shift the 10 mantissa bits to the top of float's 23.
float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    const float magnitude = std::ldexp(static_cast<float>(mant), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // Inf / NaN
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// float32 → IEEE half, round to nearest even; ≥ 65520 becomes Inf, NaN stays (quiet) NaN.
std::uint16_t float_to_half(float value) {
  const auto x = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return static_cast<std::uint16_t>(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
  if (ax >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // 65520 and up
  if (ax < 0x38800000u) {
    // Below 2^-14: a half subnormal m·2^-24, m = round(|x|·2^24) (scaling by 2^24 is exact);
    // m = 0x400 is the smallest normal, which is also its correct encoding.
    const float scaled = std::bit_cast<float>(ax) * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  std::uint32_t h = (((ax >> 23) - 127 + 15) << 10) | ((ax & 0x7FFFFFu) >> 13);
  const std::uint32_t rest = ax & 0x1FFFu;                        // the 13 dropped mantissa bits
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) != 0)) ++h;  // a carry bumps the exponent
  return static_cast<std::uint16_t>(sign | h);
}

template <typename T>
T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Element i of raw little-endian bytes, as float (float types) or int64 (integer types).
float raw_float(int data_type, const std::byte* base, std::int64_t i) {
  switch (data_type) {
    case TP::FLOAT:
      return load_le<float>(base + 4 * i);
    case TP::FLOAT16:
      return half_to_float(load_le<std::uint16_t>(base + 2 * i));
    default:  // BFLOAT16: the upper half of a float32
      return std::bit_cast<float>(std::uint32_t{load_le<std::uint16_t>(base + 2 * i)} << 16);
  }
}

std::int64_t raw_int(int data_type, const std::byte* base, std::int64_t i,
                     const std::string& what) {
  switch (data_type) {
    case TP::INT64:
      return load_le<std::int64_t>(base + 8 * i);
    case TP::INT32:
      return load_le<std::int32_t>(base + 4 * i);
    case TP::INT16:
      return load_le<std::int16_t>(base + 2 * i);
    case TP::INT8:
      return load_le<std::int8_t>(base + i);
    case TP::UINT8:
      return load_le<std::uint8_t>(base + i);
    case TP::UINT16:
      return load_le<std::uint16_t>(base + 2 * i);
    case TP::UINT32:
      return load_le<std::uint32_t>(base + 4 * i);
    case TP::BOOL:
      return load_le<std::uint8_t>(base + i) != 0 ? 1 : 0;
    default: {  // UINT64
      const auto v = load_le<std::uint64_t>(base + 8 * i);
      REFOLD_CHECK(v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                   "{}: UINT64 value {} at index {} does not fit int64", what, v, i);
      return static_cast<std::int64_t>(v);
    }
  }
}

// The range int32_data may hold for a data type stored there (ONNX widens the small types).
std::pair<std::int64_t, std::int64_t> int32_field_range(int data_type) {
  switch (data_type) {
    case TP::INT16:
      return {-32768, 32767};
    case TP::INT8:
      return {-128, 127};
    case TP::UINT8:
      return {0, 255};
    case TP::UINT16:
    case TP::FLOAT16:
    case TP::BFLOAT16:
      return {0, 65535};
    default:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  }
}

const char* field_name(Field f) {
  switch (f) {
    case Field::Float:
      return "float_data";
    case Field::Int32:
      return "int32_data";
    case Field::Int64:
      return "int64_data";
    default:
      return "uint64_data";
  }
}

int typed_count(const TP& p, Field f) {
  switch (f) {
    case Field::Float:
      return p.float_data_size();
    case Field::Int32:
      return p.int32_data_size();
    case Field::Int64:
      return p.int64_data_size();
    default:
      return p.uint64_data_size();
  }
}

}  // namespace

std::string data_type_name(int data_type) {
  if (::onnx::TensorProto_DataType_IsValid(data_type)) {
    return ::onnx::TensorProto_DataType_Name(static_cast<::onnx::TensorProto_DataType>(data_type));
  }
  // Types newer than Debian's libonnx 1.12 (ONNX 1.14–1.17), by their onnx.proto numbers.
  static const char* const newer[] = {"FLOAT8E4M3FN",   "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
                                      "FLOAT8E5M2FNUZ", "UINT4",          "INT4",
                                      "FLOAT4E2M1"};
  if (data_type >= 17 && data_type < 17 + static_cast<int>(std::size(newer)))
    return newer[data_type - 17];
  return "unknown";
}

std::string type_name(int data_type) {
  std::string name = data_type_name(data_type);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return name;
}

Tensor tensor_from_proto(const TP& proto, const TensorReadContext& context) {
  const std::string& what = context.what;
  const int data_type = proto.data_type();
  std::optional<TypeInfo> info = type_info(data_type);
  REFOLD_CHECK(info.has_value(),
               "{}: data type {} ({}) unsupported (refold reads FLOAT, FLOAT16, BFLOAT16 and the "
               "integer types up to INT64, and BOOL)",
               what, data_type_name(data_type), data_type);
  // Kept as bfloat16: the 16-bit patterns are copied as they are (raw_data or int32_data).
  const bool as_bfloat16 = data_type == TP::BFLOAT16 && context.keep_bfloat16;
  if (as_bfloat16) info->out = DType::BFloat16;
  REFOLD_CHECK(!proto.has_segment(), "{}: segmented tensors are unsupported", what);

  Shape sizes(proto.dims().begin(), proto.dims().end());
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    REFOLD_CHECK(sizes[d] >= 0, "{}: negative dim {} at axis {} in dims [{}]", what, sizes[d], d,
                 fmt::join(sizes, ", "));
  }
  const std::int64_t numel = checked_numel(sizes, what);
  const std::int64_t bytes = checked_mul(numel, info->bytes, what);
  const std::int64_t out_bytes =
      checked_mul(numel, static_cast<std::int64_t>(element_size(info->out)), what);

  // Exactly one data source, matching data_type.
  const bool external = proto.data_location() == TP::EXTERNAL;
  REFOLD_CHECK(proto.data_location() == TP::DEFAULT || external, "{}: unknown data_location {}",
               what, static_cast<int>(proto.data_location()));
  const bool has_raw = proto.has_raw_data();
  const Field field = info->field;
  for (Field other : {Field::Float, Field::Int32, Field::Int64, Field::Uint64}) {
    if (other != field && typed_count(proto, other) > 0) {
      fail("{}: {} tensor has values in {} (expected raw_data or {})", what,
           data_type_name(data_type), field_name(other), field_name(field));
    }
  }
  REFOLD_CHECK(proto.double_data_size() == 0 && proto.string_data_size() == 0,
               "{}: {} tensor has values in double_data or string_data", what,
               data_type_name(data_type));
  const int typed = typed_count(proto, field);
  REFOLD_CHECK(!(has_raw && typed > 0), "{}: both raw_data and {} are set", what,
               field_name(field));
  REFOLD_CHECK(!external || (!has_raw && typed == 0),
               "{}: external data together with inline values", what);
  REFOLD_CHECK(external || proto.external_data_size() == 0,
               "{}: external_data entries without data_location EXTERNAL", what);
  if (has_raw || (!external && typed == 0)) {
    REFOLD_CHECK(static_cast<std::int64_t>(proto.raw_data().size()) == bytes,
                 "{}: expected {} bytes, got {} (dims [{}], {})", what, bytes,
                 proto.raw_data().size(), fmt::join(sizes, ", "), data_type_name(data_type));
  } else if (!external) {
    REFOLD_CHECK(typed == numel, "{}: expected {} values in {}, got {} (dims [{}])", what, numel,
                 field_name(field), typed, fmt::join(sizes, ", "));
  }

  // External data: validated (path, file, range) before anything is allocated.
  std::optional<ExternalData> ext;
  if (external) {
    REFOLD_CHECK(!context.base_dir.empty(),
                 "{}: external data needs the model's folder (load from a file, not memory)", what);
    ext.emplace(proto, what, context.base_dir, static_cast<std::uint64_t>(bytes));
  }
  const bool direct = (data_type == TP::FLOAT || data_type == TP::INT64 || as_bfloat16);
  const std::uint64_t need = static_cast<std::uint64_t>(out_bytes) +
                             (ext && !direct ? static_cast<std::uint64_t>(bytes) : 0);
  if (context.budget != nullptr) {
    REFOLD_CHECK(need <= *context.budget,
                 "{}: {} bytes exceed the remaining memory budget of {} bytes", what, need,
                 *context.budget);
    *context.budget -= static_cast<std::uint64_t>(out_bytes);
  }

  Tensor out = empty(sizes, info->out);
  if (numel == 0) return out;
  auto* dst = static_cast<std::byte*>(out.data_ptr());
  std::vector<std::byte> staging;
  const std::byte* raw = nullptr;
  if (ext) {
    if (direct) {
      ext->read({dst, static_cast<std::size_t>(bytes)});
      return out;
    }
    staging.resize(static_cast<std::size_t>(bytes));
    ext->read(staging);
    raw = staging.data();
  } else if (has_raw) {
    raw = reinterpret_cast<const std::byte*>(proto.raw_data().data());
  }

  if (raw != nullptr) {
    if (direct) {
      std::memcpy(dst, raw, static_cast<std::size_t>(bytes));
    } else if (info->out == DType::Float32) {
      auto* o = out.data<float>();
      for (std::int64_t i = 0; i < numel; ++i) o[i] = raw_float(data_type, raw, i);
    } else {
      auto* o = out.data<std::int64_t>();
      for (std::int64_t i = 0; i < numel; ++i) o[i] = raw_int(data_type, raw, i, what);
    }
    return out;
  }

  // Typed fields (counts checked above).
  switch (field) {
    case Field::Float: {
      auto* o = out.data<float>();
      for (std::int64_t i = 0; i < numel; ++i) o[i] = proto.float_data(static_cast<int>(i));
      break;
    }
    case Field::Int64: {
      auto* o = out.data<std::int64_t>();
      for (std::int64_t i = 0; i < numel; ++i) o[i] = proto.int64_data(static_cast<int>(i));
      break;
    }
    case Field::Uint64: {
      auto* o = out.data<std::int64_t>();
      const std::uint64_t max =
          data_type == TP::UINT32
              ? std::numeric_limits<std::uint32_t>::max()
              : static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
      for (std::int64_t i = 0; i < numel; ++i) {
        const std::uint64_t v = proto.uint64_data(static_cast<int>(i));
        REFOLD_CHECK(v <= max, "{}: {} value {} at index {} out of range", what,
                     data_type_name(data_type), v, i);
        o[i] = static_cast<std::int64_t>(v);
      }
      break;
    }
    case Field::Int32: {
      const auto [lo, hi] = int32_field_range(data_type);
      for (std::int64_t i = 0; i < numel; ++i) {
        const std::int64_t v = proto.int32_data(static_cast<int>(i));
        REFOLD_CHECK(data_type == TP::BOOL || (v >= lo && v <= hi),
                     "{}: {} value {} at index {} out of range [{}, {}]", what,
                     data_type_name(data_type), v, i, lo, hi);
        if (as_bfloat16) {
          out.data<BFloat16>()[i].bits = static_cast<std::uint16_t>(v);
        } else if (data_type == TP::FLOAT16) {
          out.data<float>()[i] = half_to_float(static_cast<std::uint16_t>(v));
        } else if (data_type == TP::BFLOAT16) {
          out.data<float>()[i] = std::bit_cast<float>(static_cast<std::uint32_t>(v) << 16);
        } else {
          out.data<std::int64_t>()[i] = data_type == TP::BOOL ? (v != 0 ? 1 : 0) : v;
        }
      }
      break;
    }
  }
  return out;
}

TP tensor_to_proto(const Tensor& tensor, const std::string& name, int data_type) {
  REFOLD_CHECK(tensor.defined(), "tensor '{}': undefined", name);
  if (data_type == 0) {
    data_type = tensor.dtype() == DType::Float32    ? TP::FLOAT
                : tensor.dtype() == DType::BFloat16 ? TP::BFLOAT16
                                                    : TP::INT64;
  }
  const std::optional<TypeInfo> info = type_info(data_type);
  REFOLD_CHECK(info.has_value(), "tensor '{}': cannot write data type {}", name,
               data_type_name(data_type));
  const Tensor t = tensor.is_contiguous() ? tensor : tensor.clone(MemoryFormat::Contiguous);
  const std::int64_t n = t.numel();
  TP proto;
  proto.set_name(name);
  proto.set_data_type(data_type);
  for (std::int64_t s : t.sizes()) proto.add_dims(s);
  std::string& raw = *proto.mutable_raw_data();
  raw.resize(static_cast<std::size_t>(checked_mul(n, info->bytes, name)));
  auto put = [&](std::int64_t i, auto value) {
    std::memcpy(raw.data() + i * static_cast<std::int64_t>(sizeof(value)), &value, sizeof(value));
  };

  // The source values, one at a time: float for float tensors, int64 for int64 ones.
  const bool source_int = t.dtype() == DType::Int64;
  std::vector<float> floats;
  if (!source_int) floats = t.to_vector();
  const std::int64_t* ints = source_int ? t.data<std::int64_t>() : nullptr;

  if (data_type == TP::FLOAT || data_type == TP::FLOAT16 || data_type == TP::BFLOAT16) {
    for (std::int64_t i = 0; i < n; ++i) {
      const float v =
          source_int ? static_cast<float>(ints[i]) : floats[static_cast<std::size_t>(i)];
      if (data_type == TP::FLOAT) put(i, v);
      if (data_type == TP::FLOAT16) put(i, float_to_half(v));
      if (data_type == TP::BFLOAT16) put(i, BFloat16(v).bits);
    }
    return proto;
  }
  // Integer targets: the value range of the target type.
  const auto [lo, hi] = [&]() -> std::pair<std::int64_t, std::int64_t> {
    switch (data_type) {
      case TP::INT32:
        return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
      case TP::UINT32:
        return {0, std::numeric_limits<std::uint32_t>::max()};
      case TP::BOOL:
        return {0, 1};
      case TP::UINT64:
        return {0, std::numeric_limits<std::int64_t>::max()};
      case TP::INT64:
        return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
      default:
        return int32_field_range(data_type);
    }
  }();
  for (std::int64_t i = 0; i < n; ++i) {
    std::int64_t v = 0;
    if (source_int) {
      v = ints[i];
    } else {
      const float f = floats[static_cast<std::size_t>(i)];
      REFOLD_CHECK(std::isfinite(f) && f == std::trunc(f) && f >= -9.2e18f && f <= 9.2e18f,
                   "tensor '{}': value {} at index {} is not an integer ({})", name, f, i,
                   data_type_name(data_type));
      v = static_cast<std::int64_t>(f);
    }
    REFOLD_CHECK(v >= lo && v <= hi, "tensor '{}': value {} at index {} out of range for {}", name,
                 v, i, data_type_name(data_type));
    switch (info->bytes) {
      case 1:
        put(i, static_cast<std::uint8_t>(v));
        break;
      case 2:
        put(i, static_cast<std::uint16_t>(v));
        break;
      case 4:
        put(i, static_cast<std::uint32_t>(v));
        break;
      default:
        put(i, v);
        break;
    }
  }
  return proto;
}

}  // namespace refold::onnx::detail
