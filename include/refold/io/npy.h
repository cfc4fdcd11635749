// NumPy .npy read and write, for test inputs and outputs next to a model:
//   Tensor x = refold::io::load_npy("input.npy");      // np.save("input.npy", x)
//   refold::io::save_npy(y, "output.npy");               // np.load("output.npy")
//
// The format (numpy.lib.format): the magic "\x93NUMPY", a major and minor version byte, the
// header length (2 bytes little-endian in version 1.0, 4 bytes in 2.0 and 3.0), an ASCII
// (3.0: UTF-8) Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ending in '\n', then the data in C order.
//
// Reading trusts nothing: the header must be that dict with exactly those three keys, the
// shape non-negative integers whose element count and byte size pass checked multiplication,
// and the data exactly as long as they say (no trailing bytes), all before allocating.
// Supported: '<f4' (float32), '<i8' (int64), also '<i4' read as int64 and '<f2' read as float32
// (exact); fortran_order True is refused. Writing: float32 as '<f4', int64 as '<i8', bfloat16 as
// '<f4' (NumPy has no bfloat16; the conversion is exact); version 1.0 with numpy's exact header
// (growth room for the first dim, data on a 64-byte boundary), so the bytes equal np.save's;
// written to a temporary file and renamed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "refold/tensor.h"

namespace refold::io {

struct NpyLimits {
  std::uint64_t max_bytes = std::uint64_t{8} << 30;  // the file (and so the tensor's data)
  std::uint64_t max_header_bytes = 1 << 20;
};

Tensor load_npy(const std::filesystem::path& path, const NpyLimits& limits = {});
// `source_name` stands for the file in messages.
Tensor parse_npy(std::span<const std::byte> bytes, const std::string& source_name = "<memory>",
                 const NpyLimits& limits = {});

void save_npy(const Tensor& tensor, const std::filesystem::path& path);
std::vector<std::byte> npy_bytes(const Tensor& tensor);

}  // namespace refold::io
