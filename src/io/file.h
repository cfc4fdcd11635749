// Reading and writing whole files without trusting them (docs/reliability.md D7 and promise 5).
// Internal to the io layer; every error is a refold::Error that starts "<what> '<path>': ".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

namespace refold::io {

// A regular file opened read-only. Directories, FIFOs, devices and sockets are refused before
// anything is read (a FIFO would block a plain open(), /dev/zero never ends).
class InputFile {
 public:
  InputFile(const std::filesystem::path& path, std::string_view what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The size fstat reported when the file was opened.
  std::uint64_t size() const { return size_; }
  // Fills `out` with the bytes at [offset, offset + out.size()); a short read (the file shrank
  // since it was opened) is an error.
  void read_at(std::uint64_t offset, std::span<std::byte> out) const;
  // "<what> '<path>'", the prefix of every message about this file.
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// Writes `path` whole or not at all: bytes go to a temporary file in the same directory (so the
// final rename cannot cross file systems), which commit() flushes to disk and renames over
// `path`. Destroying the writer without a successful commit() removes the temporary file, so a
// failure at any point leaves no partial output and an existing `path` untouched.
class AtomicFileWriter {
 public:
  AtomicFileWriter(const std::filesystem::path& path, std::string_view what);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(std::span<const std::byte> bytes);
  void commit();
  const std::string& name() const { return name_; }

 private:
  void discard() noexcept;

  std::filesystem::path path_;
  std::filesystem::path temp_path_;
  std::string name_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace refold::io
