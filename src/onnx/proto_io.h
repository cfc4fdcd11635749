// Reading an ONNX ModelProto from a file without trusting it (docs/reliability.md A1–A5, A11).
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/file.h"

namespace refold::onnx::detail {

// Protobuf cannot parse messages of 2 GiB or more (its sizes are int).
inline constexpr std::uint64_t kMaxProtoBytes = (std::uint64_t{1} << 31) - 1;
// Nesting depth protobuf accepts (graphs in attributes in graphs …).
inline constexpr int kRecursionLimit = 100;

// The whole file, after checking it is a regular file no larger than `max_bytes` and < 2 GiB.
// `what` names the file kind in messages ("model", "tensor file").
std::vector<std::byte> read_file_bytes(const std::filesystem::path& path, std::uint64_t max_bytes,
                                       const std::string& what);

// Refuses a file over `max_bytes` or of 2 GiB or more, naming it.
void check_file_size(const io::InputFile& file, std::uint64_t max_bytes);

// Parses `file` as a ModelProto, reading it front to back in blocks: the file's bytes and the
// parsed model, which holds them again, are never both in memory. A failure throws
// parse_model's messages.
void parse_model_file(const io::InputFile& file, ::onnx::ModelProto& model);

// Parses `bytes` as a ModelProto with the recursion limit; a failure throws
// "truncated/corrupt protobuf (N bytes)" plus a guess at what the file really is
// (safetensors, JPEG, PNG, text, a TensorProto).
void parse_model(std::span<const std::byte> bytes, ::onnx::ModelProto& model);
void parse_tensor(std::span<const std::byte> bytes, ::onnx::TensorProto& tensor);

// A short guess at what non-ONNX bytes are ("a safetensors file", "a JPEG image", …), or "".
std::string guess_file_kind(std::span<const std::byte> bytes);

}  // namespace refold::onnx::detail
