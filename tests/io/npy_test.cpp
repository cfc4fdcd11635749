// .npy read/write: np.save's exact bytes, round trips, and every malformed header refused.
#include "refold/io/npy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "refold/error.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/onnx_builder.h"

namespace refold::io {
namespace {

std::vector<std::byte> bytes_of(const std::string& s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

// A version 1.0 file with `header` (unpadded) and `data`.
std::string npy(const std::string& header, const std::string& data) {
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xFF));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + data;
}

std::string floats(std::vector<float> v) {
  std::string s(4 * v.size(), '\0');
  std::memcpy(s.data(), v.data(), s.size());
  return s;
}

TEST(Npy, WritesNumpysExactBytes) {
  // np.save(f, np.arange(6, dtype=np.float32).reshape(2, 3))
  const std::string header =
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" + std::string(58, ' ') + "\n";
  ASSERT_EQ(header.size(), 118u);
  const std::vector<std::byte> expected = bytes_of(npy(header, floats({0, 1, 2, 3, 4, 5})));
  EXPECT_EQ(npy_bytes(testing::iota({2, 3})), expected);
}

TEST(Npy, RoundTrips) {
  testing::TempDir dir;
  const Tensor x = randn({2, 3, 4, 5}).contiguous(MemoryFormat::ChannelsLast);
  save_npy(x, dir / "x.npy");
  EXPECT_TRUE(testing::all_close(load_npy(dir / "x.npy"), x, testing::Tolerance::exact()));
  Tensor i = empty({3}, DType::Int64);
  for (int k = 0; k < 3; ++k) i.data<std::int64_t>()[k] = (std::int64_t{1} << 40) - k;
  save_npy(i, dir / "i.npy");
  const Tensor back = load_npy(dir / "i.npy");
  ASSERT_EQ(back.dtype(), DType::Int64);
  EXPECT_EQ(back.data<std::int64_t>()[2], (std::int64_t{1} << 40) - 2);
  for (const Shape& shape : {Shape{}, Shape{0, 4}, Shape{7}}) {
    const Tensor t = testing::iota(shape, 1.0f);
    EXPECT_EQ(parse_npy(npy_bytes(t)).sizes(), shape);
  }
  EXPECT_EQ(parse_npy(npy_bytes(testing::values({2.5f}, {}))).item(), 2.5f);
  // bfloat16 is written as float32, exactly.
  const Tensor bf = x.to(DType::BFloat16);
  EXPECT_TRUE(testing::all_close(parse_npy(npy_bytes(bf)), bf.to(DType::Float32),
                                 testing::Tolerance::exact()));
}

TEST(Npy, ReadsOtherTypesAndVersions) {
  const std::string i4("\x01\x00\x00\x00\xff\xff\xff\xff", 8);
  const Tensor t =
      parse_npy(bytes_of(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }\n", i4)));
  ASSERT_EQ(t.dtype(), DType::Int64);
  EXPECT_EQ(t.data<std::int64_t>()[1], -1);
  const std::string f2("\x00\x3c\x00\xc1", 4);  // 1.0, -2.5
  EXPECT_EQ(
      parse_npy(bytes_of(npy("{\"descr\":\"<f2\",\"fortran_order\":False,\"shape\":(2,)}", f2)))
          .to_vector(),
      (std::vector<float>{1.0f, -2.5f}));
  // Version 2.0: a 4-byte header length.
  const std::string h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n";
  std::string v2("\x93NUMPY\x02\x00", 8);
  v2 += std::string(1, static_cast<char>(h.size())) + std::string(3, '\0') + h + floats({4.0f});
  EXPECT_EQ(parse_npy(bytes_of(v2)).item(), 4.0f);
}

TEST(Npy, MalformedFilesAreRefused) {
  auto parse = [](const std::string& s) { return [s] { parse_npy(bytes_of(s), "f.npy"); }; };
  const std::string ok_data = floats({1, 2});
  auto with = [&](const std::string& dict) { return npy(dict, ok_data); };
  testing::expect_errors(
      {
          {"tiny", parse("\x93NUM"), "too small for a .npy file"},
          {"magic", parse(std::string("PK\x03\x04 not npy at all")), "no \\x93NUMPY magic"},
          {"version", parse(std::string("\x93NUMPY\x09\x00\x00\x00", 10)),
           "version 9.0 unsupported"},
          {"header past end", parse(std::string("\x93NUMPY\x01\x00\xff\x00{", 11)),
           "runs past the end"},
          {"big-endian", parse(with("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }")),
           "dtype '>f4' unsupported"},
          {"double", parse(with("{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }")),
           "dtype '<f8' unsupported"},
          {"fortran", parse(with("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }")),
           "fortran_order True is unsupported"},
          {"negative dim",
           parse(with("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }")),
           "is not a non-negative integer"},
          {"overflow",
           parse(with(
               "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }")),
           "size overflow"},
          {"huge dim, tiny data",
           parse(with("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }")),
           "needs 4398046511104 bytes of data, the file has 8"},
          {"trailing bytes",
           parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", ok_data)),
           "needs 4 bytes of data, the file has 8"},
          {"missing key", parse(with("{'descr': '<f4', 'shape': (2,), }")), "header needs 'descr'"},
          {"unknown key",
           parse(with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}")),
           "unknown header key 'x'"},
          {"repeated key", parse(with("{'descr': '<f4', 'descr': '<f4', 'shape': (2,), }")),
           "header key 'descr' given twice"},
          {"not a dict", parse(with("[1, 2]")), "expected '{'"},
          {"junk after", parse(with("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x")),
           "unexpected text after '}'"},
      },
      "f.npy: ");
  testing::TempDir dir;
  EXPECT_TRUE(testing::throws_error([&] { load_npy(dir.path()); }, "is a directory"));
}

}  // namespace
}  // namespace refold::io
