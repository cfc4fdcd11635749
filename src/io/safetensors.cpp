// safetensors read and write; the format and the promises are in include/refold/io/safetensors.h,
// the bad inputs this guards against in docs/reliability.md section E (row numbers cited below).
#include "refold/io/safetensors.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/element_access.h"
#include "io/file.h"

namespace refold::io {

// E12: tensor bytes are copied as they lie in the file, which is little-endian.
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swapping");

namespace {

// ---------------------------------------------------------------------------------------------
// dtypes

// Every dtype the format defines, in the reference implementation's enum order, which is
// increasing alignment: the writer sorts tensors by this rank (largest first) so that each
// tensor's offset is a multiple of its element size. `dtype` is set for the ones we load.
struct DTypeInfo {
  std::string_view name;
  std::optional<DType> dtype;
};
constexpr std::array<DTypeInfo, 20> kDTypes{{
    {"BOOL", {}},
    {"F4", {}},
    {"F6_E2M3", {}},
    {"F6_E3M2", {}},
    {"U8", {}},
    {"I8", {}},
    {"F8_E5M2", {}},
    {"F8_E4M3", {}},
    {"F8_E8M0", {}},
    {"I16", {}},
    {"U16", {}},
    {"F16", {}},
    {"BF16", DType::BFloat16},
    {"I32", {}},
    {"U32", {}},
    {"F32", DType::Float32},
    {"F64", {}},
    {"I64", DType::Int64},
    {"U64", {}},
    {"C64", {}},
}};

const DTypeInfo* find_dtype(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name) return &info;
  return nullptr;
}

std::size_t dtype_rank(DType dtype) {
  for (std::size_t i = 0; i < kDTypes.size(); ++i)
    if (kDTypes[i].dtype == dtype) return i;
  fail("safetensors: dtype {} has no safetensors name", dtype_name(dtype));
}

std::string_view safetensors_name(DType dtype) { return kDTypes[dtype_rank(dtype)].name; }

// ---------------------------------------------------------------------------------------------
// Small helpers

// Index of the first byte that does not start a well-formed UTF-8 sequence (overlong forms,
// surrogates and code points above U+10FFFF are ill-formed), or npos when all is well.
std::size_t first_invalid_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<unsigned char>(s[i]);
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t code = 0, smallest = 0;
    if ((lead & 0xE0) == 0xC0) {
      length = 2, code = lead & 0x1Fu, smallest = 0x80;
    } else if ((lead & 0xF0) == 0xE0) {
      length = 3, code = lead & 0x0Fu, smallest = 0x800;
    } else if ((lead & 0xF8) == 0xF0) {
      length = 4, code = lead & 0x07u, smallest = 0x10000;
    } else {
      return i;
    }
    if (s.size() - i < length) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(s[i + k]);
      if ((next & 0xC0) != 0x80) return i;
      code = (code << 6) | (next & 0x3Fu);
    }
    if (code < smallest || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return i;
    i += length;
  }
  return std::string_view::npos;
}

// A value quoted in an error message, cut short so a hostile header cannot flood the message.
std::string shorten(std::string_view s) {
  constexpr std::size_t kMax = 64;
  return s.size() <= kMax ? std::string(s) : std::string(s.substr(0, kMax)) + "...";
}

std::uint64_t read_le_u64(std::span<const std::byte, 8> bytes) {
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < 8; ++i)
    n |= std::uint64_t{std::to_integer<std::uint8_t>(bytes[i])} << (8 * i);
  return n;
}

// ---------------------------------------------------------------------------------------------
// Reading: the header

struct TensorSpec {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  std::uint64_t begin = 0;  // data_offsets, relative to the data section
  std::uint64_t end = 0;
};

struct SafetensorsHeader {
  std::vector<TensorSpec> tensors;
  std::map<std::string, std::string> metadata;
};

// Builds a SafetensorsHeader from the JSON events of nlohmann's SAX parser, with no DOM: the only
// legal document is two levels deep, so every event is checked against where it may appear, and the
// first wrong one throws with the tensor name and the value. This also catches what a DOM
// would silently merge (E5, duplicate keys at any level) and stops at the tensor-count cap
// before the rest of the header is even looked at (E9); memory stays linear in the header.
class HeaderReader {
 public:
  HeaderReader(const std::string& file, const SafetensorsLimits& limits)
      : file_(file), limits_(limits) {}

  SafetensorsHeader take() { return std::move(header_); }

  // --- nlohmann::json_sax interface
  bool null() { unexpected("null"); }
  bool boolean(bool value) { unexpected(value ? "true" : "false"); }
  bool number_integer(std::int64_t value) {
    // A JSON integer with a minus sign; "-0" is still a valid size.
    if (value >= 0) return number_unsigned(static_cast<std::uint64_t>(value));
    unexpected(fmt::format("negative number {}", value));
  }
  bool number_unsigned(std::uint64_t value) {
    if (state_ == State::Shape) {
      REFOLD_CHECK(value <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
                   "safetensors '{}': tensor '{}': shape entry {} ({}) is too large "
                   "(ValidationOverflow)",
                   file_, current_.name, current_.shape.size(), value);
      current_.shape.push_back(static_cast<std::int64_t>(value));
      return true;
    }
    if (state_ == State::Offsets) {
      REFOLD_CHECK(offset_count_ < 2,
                   "safetensors '{}': tensor '{}': data_offsets has more than 2 entries", file_,
                   current_.name);
      (offset_count_++ == 0 ? current_.begin : current_.end) = value;
      return true;
    }
    unexpected(fmt::format("number {}", value));
  }
  bool number_float(double /*value*/, const std::string& text) {
    unexpected(fmt::format("non-integer number {}", shorten(text)));
  }
  bool string(std::string& value) {
    if (state_ == State::Metadata) {
      header_.metadata.emplace(key_, std::move(value));
      return true;
    }
    if (state_ == State::Entry && field_ == Field::DType) {
      dtype_text_ = std::move(value);
      return true;
    }
    unexpected(fmt::format("string \"{}\"", shorten(value)));
  }
  bool binary(nlohmann::json::binary_t& /*value*/) { unexpected("binary data"); }

  bool start_object(std::size_t /*elements*/) {
    if (state_ == State::Start) {
      state_ = State::Top;
      return true;
    }
    if (state_ == State::Top) {
      if (key_ == "__metadata__") {
        state_ = State::Metadata;
      } else {
        state_ = State::Entry;
        current_ = TensorSpec{};
        current_.name = key_;
        seen_fields_ = 0;
        offset_count_ = 0;
        dtype_text_.clear();
      }
      return true;
    }
    unexpected("an object");
  }

  bool key(std::string& key) {
    if (state_ == State::Top) {
      REFOLD_CHECK(names_.insert(key).second,
                   "safetensors '{}': header has the key '{}' twice (duplicate tensor names are "
                   "ambiguous)",
                   file_, key);
      if (key != "__metadata__") {
        ++tensor_count_;
        REFOLD_CHECK(tensor_count_ <= limits_.max_tensors,
                     "safetensors '{}': header has more than {} tensors (the limit "
                     "SafetensorsLimits::max_tensors); at '{}'",
                     file_, limits_.max_tensors, key);
      }
    } else if (state_ == State::Metadata) {
      REFOLD_CHECK(!header_.metadata.contains(key),
                   "safetensors '{}': __metadata__ has the key '{}' twice", file_, key);
    } else if (state_ == State::Entry) {
      field_ = field_of(key);
      const auto bit = 1u << static_cast<unsigned>(field_);
      REFOLD_CHECK((seen_fields_ & bit) == 0, "safetensors '{}': tensor '{}': field '{}' twice",
                   file_, current_.name, key);
      seen_fields_ |= bit;
    }
    key_ = std::move(key);
    return true;
  }

  bool end_object() {
    if (state_ == State::Entry) {
      finish_entry();
      state_ = State::Top;
    } else if (state_ == State::Metadata) {
      state_ = State::Top;
    } else {  // the top-level object
      state_ = State::Done;
    }
    return true;
  }

  bool start_array(std::size_t /*elements*/) {
    if (state_ == State::Entry && field_ == Field::Shape) {
      state_ = State::Shape;
      return true;
    }
    if (state_ == State::Entry && field_ == Field::Offsets) {
      state_ = State::Offsets;
      return true;
    }
    unexpected("an array");
  }

  bool end_array() {
    if (state_ == State::Offsets)
      REFOLD_CHECK(offset_count_ == 2,
                   "safetensors '{}': tensor '{}': data_offsets has {} entries, expected 2 "
                   "[begin, end]",
                   file_, current_.name, offset_count_);
    state_ = State::Entry;
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::json::exception& error) {
    fail(
        "safetensors '{}': header is not valid JSON (InvalidHeaderDeserialization) near byte "
        "{}: {}",
        file_, position, error.what());
  }

 private:
  // Where the next event is: Top is inside the top-level object, Entry inside one tensor's
  // object, Shape/Offsets inside its arrays.
  enum class State { Start, Top, Metadata, Entry, Shape, Offsets, Done };
  enum class Field : unsigned { DType, Shape, Offsets };

  Field field_of(const std::string& key) const {
    if (key == "dtype") return Field::DType;
    if (key == "shape") return Field::Shape;
    if (key == "data_offsets") return Field::Offsets;
    fail(
        "safetensors '{}': tensor '{}': unknown field '{}' (expected dtype, shape, "
        "data_offsets)",
        file_, current_.name, shorten(key));
  }

  // A value that may not appear where it did; says what was expected there.
  [[noreturn]] void unexpected(const std::string& got) const {
    switch (state_) {
      case State::Start:
        fail("safetensors '{}': header must be a JSON object, got {}", file_, got);
      case State::Top:
        if (key_ == "__metadata__")
          fail("safetensors '{}': __metadata__ must be an object of strings, got {}", file_, got);
        fail(
            "safetensors '{}': tensor '{}': entry must be an object with dtype, shape and "
            "data_offsets, got {}",
            file_, key_, got);
      case State::Metadata:  // E10: the spec makes __metadata__ a str -> str map
        fail("safetensors '{}': __metadata__ value for '{}' must be a string, got {}", file_, key_,
             got);
      case State::Entry:
        if (field_ == Field::DType)
          fail("safetensors '{}': tensor '{}': dtype must be a string, got {}", file_,
               current_.name, got);
        if (field_ == Field::Shape)
          fail(
              "safetensors '{}': tensor '{}': shape must be an array of non-negative "
              "integers, got {}",
              file_, current_.name, got);
        fail(
            "safetensors '{}': tensor '{}': data_offsets must be an array of two non-negative "
            "integers, got {}",
            file_, current_.name, got);
      case State::Shape:  // E8
        fail(
            "safetensors '{}': tensor '{}': shape entry {} must be a non-negative integer, "
            "got {}",
            file_, current_.name, current_.shape.size(), got);
      case State::Offsets:  // E8
        fail(
            "safetensors '{}': tensor '{}': data_offsets entry {} must be a non-negative "
            "integer, got {}",
            file_, current_.name, offset_count_, got);
      case State::Done:
        break;
    }
    fail("safetensors '{}': unexpected {} after the header object", file_, got);
  }

  // One tensor's entry is complete: check that dtype, shape and offsets agree (E7, E8).
  void finish_entry() {
    static constexpr std::array<std::string_view, 3> kFieldNames{"dtype", "shape", "data_offsets"};
    for (unsigned f = 0; f < kFieldNames.size(); ++f)
      REFOLD_CHECK(seen_fields_ & (1u << f), "safetensors '{}': tensor '{}': missing field '{}'",
                   file_, current_.name, kFieldNames[f]);

    const DTypeInfo* info = find_dtype(dtype_text_);
    REFOLD_CHECK(info != nullptr, "safetensors '{}': tensor '{}': unknown dtype '{}'", file_,
                 current_.name, shorten(dtype_text_));
    REFOLD_CHECK(info->dtype.has_value(),
                 "safetensors '{}': tensor '{}' has dtype {}, unsupported (supported: F32, "
                 "BF16, I64)",
                 file_, current_.name, info->name);
    current_.dtype = *info->dtype;

    // nbytes = prod(shape) · element size, every step overflow-checked (ValidationOverflow).
    std::int64_t numel = 1;
    for (std::int64_t s : current_.shape)
      REFOLD_CHECK(!__builtin_mul_overflow(numel, s, &numel),
                   "safetensors '{}': tensor '{}': shape [{}] has too many elements "
                   "(ValidationOverflow)",
                   file_, current_.name, fmt::join(current_.shape, ", "));
    std::int64_t nbytes = 0;
    REFOLD_CHECK(!__builtin_mul_overflow(
                     numel, static_cast<std::int64_t>(element_size(current_.dtype)), &nbytes),
                 "safetensors '{}': tensor '{}': shape [{}] of {} is too many bytes "
                 "(ValidationOverflow)",
                 file_, current_.name, fmt::join(current_.shape, ", "), info->name);

    REFOLD_CHECK(current_.end >= current_.begin,
                 "safetensors '{}': tensor '{}': data_offsets [{}, {}] end before they begin "
                 "(InvalidOffset)",
                 file_, current_.name, current_.begin, current_.end);
    REFOLD_CHECK(current_.end - current_.begin == static_cast<std::uint64_t>(nbytes),
                 "safetensors '{}': tensor '{}': data_offsets [{}, {}] hold {} bytes, but {} "
                 "shape [{}] needs {} (TensorInvalidInfo)",
                 file_, current_.name, current_.begin, current_.end, current_.end - current_.begin,
                 info->name, fmt::join(current_.shape, ", "), nbytes);
    header_.tensors.push_back(std::move(current_));
  }

  const std::string& file_;
  const SafetensorsLimits& limits_;
  SafetensorsHeader header_;
  State state_ = State::Start;
  std::string key_;  // the last key seen; names the value that follows
  std::unordered_set<std::string> names_;
  std::uint64_t tensor_count_ = 0;
  // the entry being read
  TensorSpec current_;
  Field field_ = Field::DType;
  unsigned seen_fields_ = 0;  // bit per Field
  std::size_t offset_count_ = 0;
  std::string dtype_text_;
};

SafetensorsHeader parse_header(std::string_view text, const std::string& file,
                               const SafetensorsLimits& limits) {
  // E4. The reference implementation also insists on '{' first (InvalidHeaderStart); it is also
  // the cheapest sign that this is some other kind of file.
  REFOLD_CHECK(!text.empty() && text.front() == '{',
               "safetensors '{}': not a safetensors file: the header does not start with '{{' "
               "(first byte 0x{:02x}; InvalidHeaderStart)",
               file, text.empty() ? 0 : static_cast<unsigned char>(text.front()));
  const std::size_t bad = first_invalid_utf8(text);
  REFOLD_CHECK(bad == std::string_view::npos,
               "safetensors '{}': header is not valid UTF-8 at byte {} (0x{:02x}; InvalidHeader)",
               file, bad,
               bad == std::string_view::npos ? 0 : static_cast<unsigned char>(text[bad]));
  // nlohmann's lexer takes a NUL byte for the end of the input, so "{}\0anything" would pass;
  // JSON allows NUL nowhere (in strings it must be escaped), so refuse it here.
  const std::size_t nul = text.find('\0');
  REFOLD_CHECK(nul == std::string_view::npos,
               "safetensors '{}': header is not valid JSON (InvalidHeaderDeserialization): NUL "
               "byte at byte {}",
               file, nul);
  HeaderReader reader(file, limits);
  nlohmann::json::sax_parse(text.begin(), text.end(), &reader);
  return reader.take();
}

// E6: the tensors, sorted by offset, must tile [0, data_bytes) exactly: the first begins at 0,
// each begins where the previous ended, the last ends at the end of the file. Returns the
// tensors in that order.
std::vector<const TensorSpec*> check_layout(const SafetensorsHeader& header,
                                            std::uint64_t data_bytes, const std::string& file) {
  std::vector<const TensorSpec*> order;
  order.reserve(header.tensors.size());
  for (const auto& t : header.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const TensorSpec* a, const TensorSpec* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  std::uint64_t covered = 0;
  const TensorSpec* previous = nullptr;
  for (const TensorSpec* t : order) {
    if (t->begin != covered) {
      REFOLD_CHECK(previous != nullptr,
                   "safetensors '{}': tensor '{}': data_offsets [{}, {}]: the first tensor must "
                   "start at byte 0 (InvalidOffset)",
                   file, t->name, t->begin, t->end);
      REFOLD_CHECK(t->begin < covered,
                   "safetensors '{}': tensor '{}': data_offsets [{}, {}] leave a gap: bytes "
                   "[{}, {}) after tensor '{}' belong to no tensor (InvalidOffset)",
                   file, t->name, t->begin, t->end, covered, t->begin, previous->name);
      fail(
          "safetensors '{}': tensor '{}': data_offsets [{}, {}] overlap tensor '{}' [{}, {}] "
          "(InvalidOffset)",
          file, t->name, t->begin, t->end, previous->name, previous->begin, previous->end);
    }
    covered = t->end;
    previous = t;
  }
  REFOLD_CHECK(covered == data_bytes,
               "safetensors '{}': the tensors end at byte {}{} but the data section holds {} "
               "bytes (MetadataIncompleteBuffer)",
               file, covered,
               previous ? fmt::format(" (tensor '{}')", previous->name) : std::string(),
               data_bytes);
  return order;
}

// Reads a file of `total` bytes through read_at(offset, out), which fills `out` with the bytes
// at [offset, offset + out.size()); every range asked for is within `total`.
SafetensorsFile read_safetensors(
    std::uint64_t total, const std::function<void(std::uint64_t, std::span<std::byte>)>& read_at,
    const std::string& file, const SafetensorsLimits& limits) {
  // E1
  REFOLD_CHECK(total >= 8,
               "safetensors '{}': not a safetensors file: it has {} bytes, fewer than the 8-byte "
               "header length (HeaderTooSmall)",
               file, total);
  std::array<std::byte, 8> prefix{};
  read_at(0, prefix);
  const std::uint64_t n = read_le_u64(prefix);
  // E2: checked before anything of size n exists.
  REFOLD_CHECK(n <= limits.max_header_bytes,
               "safetensors '{}': header length {} exceeds the limit of {} bytes "
               "(HeaderTooLarge): not a safetensors file, or raise "
               "SafetensorsLimits::max_header_bytes",
               file, n, limits.max_header_bytes);
  // E3: 8 + n must not overflow and must fit in the file.
  REFOLD_CHECK(n <= total - 8,
               "safetensors '{}': header length {} runs past the end of the {}-byte file "
               "(InvalidHeaderLength): not a safetensors file, or a truncated one",
               file, n, total);
  const std::uint64_t data_offset = 8 + n;
  const std::uint64_t data_bytes = total - data_offset;
  REFOLD_CHECK(data_bytes <= limits.max_total_bytes,
               "safetensors '{}': data section of {} bytes exceeds the limit of {} bytes "
               "(SafetensorsLimits::max_total_bytes)",
               file, data_bytes, limits.max_total_bytes);

  std::string text(static_cast<std::size_t>(n), '\0');
  read_at(8, std::as_writable_bytes(std::span(text)));
  SafetensorsHeader header = parse_header(text, file, limits);
  text = std::string();

  // Allocation happens only now: the tensors tile the data section, so together they are
  // exactly data_bytes, which exist in the file and are within max_total_bytes.
  const std::vector<const TensorSpec*> order = check_layout(header, data_bytes, file);
  SafetensorsFile out;
  for (const TensorSpec* spec : order) {
    Tensor t = empty(spec->shape, spec->dtype);
    // E12: the data may sit at any alignment in the file; this is a byte copy into aligned
    // storage, never a typed read of the file's bytes.
    read_at(data_offset + spec->begin,
            std::span(static_cast<std::byte*>(t.data_ptr()), spec->end - spec->begin));
    out.tensors.insert(spec->name, std::move(t));
  }
  out.metadata = std::move(header.metadata);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Writing

struct Planned {
  const std::string* name;
  const Tensor* tensor;
  std::uint64_t nbytes;
};

using Sink = std::function<void(std::span<const std::byte>)>;

// Validates what will be written and builds the header; `label` prefixes messages.
std::pair<std::string, std::vector<Planned>> plan_file(
    const StateDict& state, const std::map<std::string, std::string>& metadata,
    const std::string& label) {
  const auto check_text = [&](const std::string& s, std::string_view what) {
    REFOLD_CHECK(first_invalid_utf8(s) == std::string_view::npos,
                 "{}: {} '{}' is not valid UTF-8 (the header is JSON)", label, what, shorten(s));
  };
  std::vector<Planned> planned;
  planned.reserve(state.size());
  for (const auto& [name, tensor] : state) {
    REFOLD_CHECK(name != "__metadata__",
                 "{}: a tensor cannot be named '__metadata__' (the format reserves it)", label);
    check_text(name, "tensor name");
    REFOLD_CHECK(tensor.defined(), "{}: tensor '{}' is undefined", label, name);
    const auto nbytes = static_cast<std::uint64_t>(tensor.numel()) * tensor.element_size();
    planned.push_back({&name, &tensor, nbytes});
  }
  // As the Python library: largest alignment first, then by name; offsets follow this order.
  std::sort(planned.begin(), planned.end(), [](const Planned& a, const Planned& b) {
    const std::size_t ra = dtype_rank(a.tensor->dtype()), rb = dtype_rank(b.tensor->dtype());
    return ra != rb ? ra > rb : *a.name < *b.name;
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    nlohmann::ordered_json meta = nlohmann::ordered_json::object();
    for (const auto& [key, value] : metadata) {
      check_text(key, "metadata key");
      check_text(value, "metadata value");
      meta[key] = value;
    }
    header["__metadata__"] = std::move(meta);
  }
  std::uint64_t offset = 0;
  for (const Planned& p : planned) {
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = safetensors_name(p.tensor->dtype());
    entry["shape"] = p.tensor->sizes();
    entry["data_offsets"] = {offset, offset + p.nbytes};
    header[*p.name] = std::move(entry);
    offset += p.nbytes;
  }
  std::string text = header.dump();
  // Spaces up to a multiple of 8, so the data section starts 8-byte aligned in the file.
  text.append((8 - text.size() % 8) % 8, ' ');
  return {std::move(text), std::move(planned)};
}

// A tensor's elements in logical row-major order, whatever its strides: byte copies, so int64
// and NaN payloads are kept exactly.
void emit_tensor(const Tensor& t, const Sink& sink) {
  const std::size_t es = t.element_size();
  const auto nbytes = static_cast<std::size_t>(t.numel()) * es;
  const auto* base = static_cast<const std::byte*>(t.data_ptr());
  if (t.is_contiguous()) {
    sink(std::span(base, nbytes));
    return;
  }
  std::vector<std::byte> dense(nbytes);
  std::byte* dst = dense.data();
  // Rows along the last dimension; the outer dimensions are walked by index.
  const Shape outer_sizes(t.sizes().begin(), t.sizes().end() - 1);
  const Shape outer_strides(t.strides().begin(), t.strides().end() - 1);
  const std::int64_t row = t.sizes().back(), step = t.strides().back();
  for_each_index(outer_sizes, [&](const Shape& index) {
    const std::int64_t start = offset_of(index, outer_strides);
    for (std::int64_t j = 0; j < row; ++j, dst += es)
      std::memcpy(dst, base + static_cast<std::size_t>(start + j * step) * es, es);
  });
  sink(dense);
}

void emit_file(const std::string& header, const std::vector<Planned>& planned, const Sink& sink) {
  std::array<std::byte, 8> prefix{};
  for (std::size_t i = 0; i < 8; ++i)
    prefix[i] = static_cast<std::byte>((std::uint64_t{header.size()} >> (8 * i)) & 0xFF);
  sink(prefix);
  sink(std::as_bytes(std::span(header)));
  for (const Planned& p : planned) emit_tensor(*p.tensor, sink);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public API

SafetensorsFile parse_safetensors_file(std::span<const std::byte> bytes,
                                       const std::string& source_name,
                                       const SafetensorsLimits& limits) {
  return read_safetensors(
      bytes.size(),
      [&](std::uint64_t offset, std::span<std::byte> out) {
        if (!out.empty()) std::memcpy(out.data(), bytes.data() + offset, out.size());
      },
      source_name, limits);
}

SafetensorsFile read_safetensors_file(const std::filesystem::path& path,
                                      const SafetensorsLimits& limits) {
  const InputFile file(path, "safetensors");
  return read_safetensors(
      file.size(),
      [&](std::uint64_t offset, std::span<std::byte> out) { file.read_at(offset, out); },
      path.string(), limits);
}

StateDict load_safetensors(const std::filesystem::path& path, const SafetensorsLimits& limits) {
  return read_safetensors_file(path, limits).tensors;
}

StateDict parse_safetensors(std::span<const std::byte> bytes, const std::string& source_name,
                            const SafetensorsLimits& limits) {
  return parse_safetensors_file(bytes, source_name, limits).tensors;
}

std::vector<std::byte> serialize_safetensors(const StateDict& state,
                                             const std::map<std::string, std::string>& metadata) {
  const auto [header, planned] = plan_file(state, metadata, "safetensors");
  std::uint64_t total = 8 + header.size();
  for (const Planned& p : planned) total += p.nbytes;
  std::vector<std::byte> out(static_cast<std::size_t>(total));
  std::size_t filled = 0;
  emit_file(header, planned, [&](std::span<const std::byte> bytes) {
    if (bytes.empty()) return;
    std::memcpy(out.data() + filled, bytes.data(), bytes.size());
    filled += bytes.size();
  });
  return out;
}

void save_safetensors(const StateDict& state, const std::filesystem::path& path,
                      const std::map<std::string, std::string>& metadata) {
  // Everything is validated before the temporary file exists.
  const auto [header, planned] =
      plan_file(state, metadata, fmt::format("safetensors '{}'", path.string()));
  AtomicFileWriter writer(path, "safetensors");
  emit_file(header, planned, [&](std::span<const std::byte> bytes) { writer.write(bytes); });
  writer.commit();
}

}  // namespace refold::io
