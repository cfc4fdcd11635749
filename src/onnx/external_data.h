// External tensor data (docs/reliability.md section D): a TensorProto whose bytes live in another
// file, named by `external_data` entries {location, offset, length, checksum}.
//
// The file must stay inside the model's folder, whatever the path says:
//   - `location` is relative, non-empty, without NUL, and after lexical normalization does not
//     start with ".." (rejects "../../etc/passwd", "/etc/passwd", "sub/../../x");
//   - its realpath lies under the realpath of the model's folder (rejects symlinks that point
//     out), the last component is opened with O_NOFOLLOW, and the opened file must be a regular
//     file (not a directory, FIFO, device or /proc entry) with a single hard link (a hard link
//     can reach a file outside the folder);
//   - `offset` and `length` are decimal digits, and [offset, offset + length) lies in the file;
//     `length`, when given, equals the tensor's byte size;
//   - unknown keys and repeated keys are errors (never interpreted); `checksum` is ignored.
// Nothing is allocated before these checks pass.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace refold::onnx::detail {

// An open, validated external data range.
class ExternalData {
 public:
  // `what` names the tensor in messages ("initializer 'W'"); `expected_bytes` is the tensor's
  // byte size from its dims and data type.
  ExternalData(const ::onnx::TensorProto& tensor, const std::string& what,
               const std::filesystem::path& base_dir, std::uint64_t expected_bytes);
  ~ExternalData();
  ExternalData(const ExternalData&) = delete;
  ExternalData& operator=(const ExternalData&) = delete;

  // Reads the expected_bytes bytes into `out` (out.size() == expected_bytes).
  void read(std::span<std::byte> out) const;

 private:
  std::string what_;
  std::string location_;
  int fd_ = -1;
  std::uint64_t offset_ = 0;
  std::uint64_t length_ = 0;
};

}  // namespace refold::onnx::detail
