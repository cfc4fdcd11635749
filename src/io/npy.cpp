#include "refold/io/npy.h"

#include <bit>
#include <cstring>
#include <optional>
#include <set>
#include <string>

#include "core/check.h"
#include "core/checked_math.h"
#include "io/file.h"

namespace refold::io {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
constexpr std::size_t kAlign = 64;  // numpy aligns the data to 64 bytes since 1.14

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// A recursive-descent reader for the one dict literal numpy writes; anything else is an error.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader h;
    std::set<std::string> seen;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted();
      REFOLD_CHECK(seen.insert(key).second, "{}: header key '{}' given twice", name_, key);
      expect(':');
      if (key == "descr") {
        h.descr = quoted();
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
      } else if (key == "shape") {
        h.shape = tuple();
      } else {
        fail("{}: unknown header key '{}'", name_, key);
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      REFOLD_CHECK(peek() == '}', "{}: header: expected ',' or '}}' at byte {}", name_, pos_);
    }
    ++pos_;
    while (pos_ < s_.size()) {
      REFOLD_CHECK(s_[pos_] == ' ' || s_[pos_] == '\n', "{}: header: unexpected text after '}}'",
                   name_);
      ++pos_;
    }
    REFOLD_CHECK(seen.size() == 3, "{}: header needs 'descr', 'fortran_order' and 'shape' (got {})",
                 name_, seen.size());
    return h;
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n')) ++pos_;
  }
  void expect(char c) {
    skip_space();
    REFOLD_CHECK(peek() == c, "{}: header: expected '{}' at byte {}", name_, c, pos_);
    ++pos_;
  }
  std::string quoted() {
    skip_space();
    const char q = peek();
    REFOLD_CHECK(q == '\'' || q == '"', "{}: header: expected a string at byte {}", name_, pos_);
    const std::size_t end = s_.find(q, pos_ + 1);
    REFOLD_CHECK(end != std::string_view::npos, "{}: header: unterminated string", name_);
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    REFOLD_CHECK(s_.substr(pos_, 5) == "False", "{}: header: fortran_order is not True or False",
                 name_);
    pos_ += 5;
    return false;
  }
  Shape tuple() {
    expect('(');
    Shape shape;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      const std::size_t start = pos_;
      std::int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        v = checked_add(checked_mul(v, 10, name_), peek() - '0', name_);
        ++pos_;
      }
      REFOLD_CHECK(pos_ > start, "{}: header: shape entry at byte {} is not a non-negative integer",
                   name_, start);
      shape.push_back(v);
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      REFOLD_CHECK(peek() == ')', "{}: header: expected ',' or ')' in shape at byte {}", name_,
                   pos_);
    }
    ++pos_;
    return shape;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t pos_ = 0;
};

std::uint64_t read_le(const std::byte* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  const std::uint32_t mant = h & 0x3FFu;
  if (exp == 0) {
    const float magnitude = static_cast<float>(mant) * (1.0f / 16777216.0f);  // m·2^-24
    return sign != 0 ? -magnitude : magnitude;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

}  // namespace

Tensor parse_npy(std::span<const std::byte> bytes, const std::string& source_name,
                 const NpyLimits& limits) {
  const std::string& name = source_name;
  REFOLD_CHECK(bytes.size() >= kMagicBytes + 4, "{}: {} bytes is too small for a .npy file", name,
               bytes.size());
  REFOLD_CHECK(std::memcmp(bytes.data(), kMagic, kMagicBytes) == 0,
               "{}: not a .npy file (no \\x93NUMPY magic)", name);
  const auto major = static_cast<int>(bytes[6]);
  const auto minor = static_cast<int>(bytes[7]);
  REFOLD_CHECK(major >= 1 && major <= 3 && minor == 0, "{}: .npy version {}.{} unsupported", name,
               major, minor);
  const int length_bytes = major == 1 ? 2 : 4;
  const std::size_t start = 8 + static_cast<std::size_t>(length_bytes);
  REFOLD_CHECK(bytes.size() >= start, "{}: truncated .npy header", name);
  const std::uint64_t header_len = read_le(bytes.data() + 8, length_bytes);
  REFOLD_CHECK(header_len <= limits.max_header_bytes, "{}: header of {} bytes exceeds the limit {}",
               name, header_len, limits.max_header_bytes);
  REFOLD_CHECK(header_len <= bytes.size() - start,
               "{}: header of {} bytes runs past the end of the file ({} bytes)", name, header_len,
               bytes.size());
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + start), header_len);
  const NpyHeader h = HeaderParser(text, name).parse();
  REFOLD_CHECK(!h.fortran_order, "{}: fortran_order True is unsupported (save a C-order array)",
               name);

  int itemsize = 0;
  DType dtype = DType::Float32;
  if (h.descr == "<f4") {
    itemsize = 4;
  } else if (h.descr == "<f2") {
    itemsize = 2;
  } else if (h.descr == "<i8") {
    itemsize = 8;
    dtype = DType::Int64;
  } else if (h.descr == "<i4") {
    itemsize = 4;
    dtype = DType::Int64;
  } else {
    fail("{}: dtype '{}' unsupported (refold reads <f4, <f2, <i8, <i4)", name, h.descr);
  }
  const std::int64_t numel = checked_numel(h.shape, name);
  const std::int64_t data_bytes = checked_mul(numel, itemsize, name);
  const std::uint64_t present = bytes.size() - start - header_len;
  REFOLD_CHECK(static_cast<std::uint64_t>(data_bytes) == present,
               "{}: shape ({}) of {} needs {} bytes of data, the file has {}", name,
               fmt::join(h.shape, ", "), h.descr, data_bytes, present);
  const std::int64_t out_bytes =
      checked_mul(numel, static_cast<std::int64_t>(element_size(dtype)), name);
  REFOLD_CHECK(static_cast<std::uint64_t>(out_bytes) <= limits.max_bytes,
               "{}: {} bytes exceed the limit of {} bytes", name, out_bytes, limits.max_bytes);

  Tensor out = empty(h.shape, dtype);
  if (numel == 0) return out;
  const std::byte* data = bytes.data() + start + header_len;
  if (h.descr == "<f4" || h.descr == "<i8") {
    std::memcpy(out.data_ptr(), data, static_cast<std::size_t>(data_bytes));
  } else if (h.descr == "<f2") {
    float* o = out.data<float>();
    for (std::int64_t i = 0; i < numel; ++i) {
      o[i] = half_to_float(static_cast<std::uint16_t>(read_le(data + 2 * i, 2)));
    }
  } else {
    std::int64_t* o = out.data<std::int64_t>();
    for (std::int64_t i = 0; i < numel; ++i) {
      std::int32_t v = 0;
      std::memcpy(&v, data + 4 * i, 4);
      o[i] = v;
    }
  }
  return out;
}

Tensor load_npy(const std::filesystem::path& path, const NpyLimits& limits) {
  InputFile file(path, "npy file");
  REFOLD_CHECK(file.size() <= limits.max_bytes + limits.max_header_bytes + 16,
               "{}: {} bytes exceed the limit of {} bytes", file.name(), file.size(),
               limits.max_bytes);
  std::vector<std::byte> bytes(file.size());
  file.read_at(0, bytes);
  return parse_npy(bytes, file.name(), limits);
}

std::vector<std::byte> npy_bytes(const Tensor& tensor) {
  REFOLD_CHECK(tensor.defined(), "save_npy: the tensor is undefined");
  const bool is_int = tensor.dtype() == DType::Int64;
  std::string shape;
  for (std::int64_t s : tensor.sizes()) shape += fmt::format("{}, ", s);
  if (tensor.dim() > 1) shape.resize(shape.size() - 2);  // "(2, 3)" but "(3,)" and "()"
  if (tensor.dim() == 1) shape.resize(shape.size() - 1);
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}",
                                   is_int ? "<i8" : "<f4", shape);
  // As numpy writes it: room for the first dim to grow to 21 digits, then spaces up to a
  // 64-byte boundary (a full 64 when already aligned) and '\n'.
  if (tensor.dim() > 0) {
    header.append(21 - std::min<std::size_t>(21, std::to_string(tensor.size(0)).size()), ' ');
  }
  const std::size_t unpadded = kMagicBytes + 2 + 2 + header.size() + 1;
  header.append(kAlign - unpadded % kAlign, ' ');
  header.push_back('\n');
  REFOLD_CHECK(header.size() <= 0xFFFF, "save_npy: header too long ({} bytes)", header.size());

  const std::int64_t n = tensor.numel();
  const std::size_t data_bytes =
      static_cast<std::size_t>(checked_mul(n, is_int ? 8 : 4, "save_npy"));
  std::vector<std::byte> out(kMagicBytes + 4 + header.size() + data_bytes);
  std::memcpy(out.data(), kMagic, kMagicBytes);
  out[6] = std::byte{1};
  out[7] = std::byte{0};
  out[8] = static_cast<std::byte>(header.size() & 0xFF);
  out[9] = static_cast<std::byte>(header.size() >> 8);
  std::memcpy(out.data() + 10, header.data(), header.size());
  std::byte* data = out.data() + 10 + header.size();
  if (is_int) {
    const Tensor t = tensor.is_contiguous() ? tensor : tensor.clone(MemoryFormat::Contiguous);
    if (n > 0) std::memcpy(data, t.data<std::int64_t>(), data_bytes);
  } else {
    const std::vector<float> values = tensor.to_vector();  // logical order, bf16 widened exactly
    if (n > 0) std::memcpy(data, values.data(), data_bytes);
  }
  return out;
}

void save_npy(const Tensor& tensor, const std::filesystem::path& path) {
  const std::vector<std::byte> bytes = npy_bytes(tensor);
  AtomicFileWriter writer(path, "npy file");
  writer.write(bytes);
  writer.commit();
}

}  // namespace refold::io
