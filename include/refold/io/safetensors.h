// safetensors read and write of a StateDict, so that weights saved by PyTorch with
//   safetensors.torch.save_file(model.state_dict(), "model.safetensors")
// load by name:
//   refold::StateDict sd = refold::io::load_safetensors("model.safetensors");
//   model.load_state_dict(sd);
//
// The format (https://github.com/huggingface/safetensors):
//   8 bytes   N, the header length, unsigned little-endian
//   N bytes   a UTF-8 JSON object: {"__metadata__": {str: str}, "<name>": {"dtype": "F32",
//             "shape": [2, 3], "data_offsets": [begin, end]}, ...}, padded with spaces
//   the rest  the data section; each tensor's bytes are [begin, end) of it, row-major,
//             little-endian, and the tensors tile the section exactly (no gaps, no overlaps).
//
// Reading trusts nothing in the file (docs/reliability.md section E): every size is checked against
// the bytes actually present and the limits below before anything is allocated, and every
// problem throws refold::Error naming the file, the tensor and the offending value.
// Supported dtypes: F32, BF16, I64 (BatchNorm's num_batches_tracked); other dtypes are refused
// by name. The host must be little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "refold/state_dict.h"

namespace refold::io {

struct SafetensorsLimits {
  std::uint64_t max_header_bytes = 100'000'000;  // the reference implementation's limit
  std::uint64_t max_tensors = 1'000'000;
  std::uint64_t max_total_bytes = std::uint64_t{16} << 30;  // data section, 16 GiB
};

// Everything a file holds: the tensors (in data-section order) and the `__metadata__` map.
struct SafetensorsFile {
  StateDict tensors;
  std::map<std::string, std::string> metadata;
};

// Reads a whole safetensors file. The file must be a regular file.
SafetensorsFile read_safetensors_file(const std::filesystem::path& path,
                                      const SafetensorsLimits& limits = {});
// Parses safetensors bytes held in memory; `source_name` stands for the file in messages.
SafetensorsFile parse_safetensors_file(std::span<const std::byte> bytes,
                                       const std::string& source_name = "<memory>",
                                       const SafetensorsLimits& limits = {});

// The tensors alone, for the common case (metadata dropped).
StateDict load_safetensors(const std::filesystem::path& path, const SafetensorsLimits& limits = {});
StateDict parse_safetensors(std::span<const std::byte> bytes,
                            const std::string& source_name = "<memory>",
                            const SafetensorsLimits& limits = {});

// The bytes of a safetensors file as the Python library writes them: tensors sorted by
// dtype alignment (largest first) then name, data offsets contiguous from 0, compact JSON with
// `__metadata__` first (omitted when empty), header padded with spaces to a multiple of 8 so
// the data section starts 8-byte aligned. Each tensor is written in logical row-major order
// whatever its strides (a channels_last weight is written in NCHW order, as PyTorch's
// `.contiguous()` does before saving).
std::vector<std::byte> serialize_safetensors(
    const StateDict& state, const std::map<std::string, std::string>& metadata = {});

// Writes serialize_safetensors' bytes to `path`, whole or not at all: a temporary file in the
// same directory, flushed to disk, then renamed over `path`. On any failure nothing is left
// behind and an existing `path` is untouched.
void save_safetensors(const StateDict& state, const std::filesystem::path& path,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace refold::io
