#include "onnx/external_data.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <system_error>

#include "core/check.h"

namespace refold::onnx::detail {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int error) { return std::generic_category().message(error); }

// A decimal, non-negative number that fits int64 ("12", not "-1", "0x10", "1e3" or "").
std::uint64_t parse_decimal(const std::string& text, const std::string& what, const char* key) {
  REFOLD_CHECK(!text.empty() && text.size() <= 19, "{}: external data {} '{}' is not a number",
               what, key, text);
  std::uint64_t v = 0;
  for (char c : text) {
    REFOLD_CHECK(c >= '0' && c <= '9', "{}: external data {} '{}' is not a non-negative integer",
                 what, key, text);
    v = v * 10 + static_cast<std::uint64_t>(c - '0');  // 19 digits < 2^64: no overflow
  }
  REFOLD_CHECK(v <= static_cast<std::uint64_t>(INT64_MAX), "{}: external data {} {} is too large",
               what, key, text);
  return v;
}

// The location, checked lexically: relative and staying below the model folder.
fs::path lexical_location(const std::string& location, const std::string& what) {
  REFOLD_CHECK(!location.empty(), "{}: external data location is empty", what);
  REFOLD_CHECK(location.find('\0') == std::string::npos,
               "{}: external data location contains a NUL byte", what);
  const fs::path p(location);
  REFOLD_CHECK(!p.is_absolute() && !p.has_root_directory() && !p.has_root_name(),
               "{}: external data location '{}' is absolute; it must be relative to the model "
               "folder",
               what, location);
  const fs::path normal = p.lexically_normal();
  REFOLD_CHECK(!normal.empty() && normal != "." && *normal.begin() != "..",
               "{}: external data location '{}' leaves the model folder", what, location);
  return normal;
}

}  // namespace

ExternalData::ExternalData(const ::onnx::TensorProto& tensor, const std::string& what,
                           const fs::path& base_dir, std::uint64_t expected_bytes)
    : what_(what) {
  std::optional<std::string> location, offset, length;
  for (const auto& entry : tensor.external_data()) {
    const std::string& key = entry.key();
    std::optional<std::string>* slot = nullptr;
    if (key == "location") slot = &location;
    if (key == "offset") slot = &offset;
    if (key == "length") slot = &length;
    if (key == "checksum") continue;  // SHA-1 of the bytes; not verified
    REFOLD_CHECK(slot != nullptr, "{}: unknown external data key '{}'", what, key);
    REFOLD_CHECK(!slot->has_value(), "{}: external data key '{}' given twice", what, key);
    *slot = entry.value();
  }
  REFOLD_CHECK(location.has_value(), "{}: external data without a 'location'", what);
  location_ = *location;
  const fs::path relative = lexical_location(location_, what);
  offset_ = offset ? parse_decimal(*offset, what, "offset") : 0;
  length_ = length ? parse_decimal(*length, what, "length") : expected_bytes;
  REFOLD_CHECK(length_ == expected_bytes,
               "{}: external data length {} differs from the tensor's size of {} bytes", what,
               length_, expected_bytes);

  std::error_code ec;
  const fs::path base = fs::canonical(base_dir, ec);
  REFOLD_CHECK(!ec, "{}: cannot resolve the model folder '{}': {}", what, base_dir.string(),
               ec.message());
  const fs::path real = fs::canonical(base / relative, ec);
  REFOLD_CHECK(!ec, "{}: external data file '{}' cannot be opened: {}", what, location_,
               ec.message());
  const fs::path inside = real.lexically_relative(base);
  REFOLD_CHECK(!inside.empty() && *inside.begin() != "..",
               "{}: external data file '{}' resolves to '{}', outside the model folder '{}'", what,
               location_, real.string(), base.string());

  // O_NONBLOCK: a FIFO must not block open(); it is refused below anyway.
  fd_ = ::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  REFOLD_CHECK(fd_ >= 0, "{}: external data file '{}' cannot be opened: {}", what, location_,
               errno_text(errno));
  struct stat st {};
  const bool stat_ok = ::fstat(fd_, &st) == 0;
  const int stat_error = errno;
  auto reject = [&](const std::string& problem) {
    ::close(fd_);
    fd_ = -1;
    fail("{}: external data file '{}' {}", what, location_, problem);
  };
  if (!stat_ok) reject("cannot be inspected: " + errno_text(stat_error));
  if (!S_ISREG(st.st_mode)) reject("is not a regular file");
  if (st.st_nlink != 1) {
    reject(fmt::format("has {} hard links; refusing a file that may live outside the model folder",
                       st.st_nlink));
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (offset_ > size || length_ > size - offset_) {
    reject(fmt::format("is {} bytes; offset {} + length {} lies beyond its end", size, offset_,
                       length_));
  }
}

ExternalData::~ExternalData() {
  if (fd_ >= 0) ::close(fd_);
}

void ExternalData::read(std::span<std::byte> out) const {
  REFOLD_CHECK(out.size() == length_, "{}: external data read of {} bytes, expected {}", what_,
               out.size(), length_);
  std::uint64_t done = 0;
  while (done < out.size()) {
    const std::uint64_t chunk = std::min<std::uint64_t>(out.size() - done, 1u << 30);
    const ::ssize_t n = ::pread(fd_, out.data() + done, static_cast<std::size_t>(chunk),
                                static_cast<::off_t>(offset_ + done));
    const int error = errno;
    if (n < 0 && error == EINTR) continue;
    REFOLD_CHECK(n > 0, "{}: external data file '{}': read failed at offset {}: {}", what_,
                 location_, offset_ + done, n < 0 ? errno_text(error) : "file shrank");
    done += static_cast<std::uint64_t>(n);
  }
}

}  // namespace refold::onnx::detail
