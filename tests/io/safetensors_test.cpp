// safetensors: round trips, the exact bytes the Python library writes, and every bad input of
// docs/reliability.md section E.
#include "refold/io/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/tensor.h"
#include "testing/compare.h"

namespace refold::io {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// ---------------------------------------------------------------------------------------------
// Building files by hand

std::vector<std::byte> to_bytes(std::string_view s) {
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  return {p, p + s.size()};
}

void append_le(std::vector<std::byte>& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
}

void append_f32(std::vector<std::byte>& out, float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, 4);
  append_le(out, bits, 4);
}

// 8-byte little-endian header length (the true one unless `n` overrides it), header, data.
std::vector<std::byte> file_bytes(std::string_view header, const std::vector<std::byte>& data = {},
                                  std::optional<std::uint64_t> n = {}) {
  std::vector<std::byte> out;
  append_le(out, n.value_or(header.size()), 8);
  const auto h = to_bytes(header);
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::vector<std::byte> zeros_bytes(std::size_t n) { return std::vector<std::byte>(n); }

// Pads a JSON header with spaces to a multiple of 8, as the Python library does.
std::string padded(std::string header) {
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           fmt::format("refold_safetensors_{}_{}", ::getpid(), info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  }
  void write_raw(const fs::path& path, const std::vector<std::byte>& bytes) const {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  }
  std::vector<std::byte> read_raw(const fs::path& path) const {
    std::ifstream f(path, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    return to_bytes(s);
  }

  fs::path dir_;
};

std::int64_t int64_at(const Tensor& t) { return t.data<std::int64_t>()[0]; }

// ---------------------------------------------------------------------------------------------
// Round trips

TEST_F(Safetensors, RoundTripKeepsEveryDtypeShapeAndValue) {
  Generator gen(7);
  StateDict state;
  state.insert("conv.weight", randn({4, 3, 3, 3}, {}, gen));
  state.insert("head.weight", randn({5, 3}, DType::BFloat16, gen));
  Tensor count = empty({}, DType::Int64);  // BatchNorm's num_batches_tracked: 0-d
  count.data<std::int64_t>()[0] = (std::int64_t{1} << 53) + 1;  // not representable in float
  state.insert("bn.num_batches_tracked", count);
  Tensor ids = empty({2}, DType::Int64);
  ids.data<std::int64_t>()[0] = -5;
  ids.data<std::int64_t>()[1] = std::numeric_limits<std::int64_t>::max();
  state.insert("ids", ids);
  state.insert("empty", empty({0, 3}));

  const StateDict loaded = parse_safetensors(serialize_safetensors(state));
  ASSERT_EQ(loaded.size(), state.size());
  for (const auto& [name, expected] : state) {
    SCOPED_TRACE(name);
    const Tensor& got = loaded.at(name);
    EXPECT_EQ(got.dtype(), expected.dtype());
    EXPECT_EQ(got.sizes(), expected.sizes());
    EXPECT_TRUE(got.is_contiguous());
    if (expected.dtype() != DType::Int64) {
      EXPECT_TRUE(testing::all_close(got, expected, testing::Tolerance::exact()));
    }
  }
  EXPECT_EQ(int64_at(loaded.at("bn.num_batches_tracked")), (std::int64_t{1} << 53) + 1);
  EXPECT_EQ(loaded.at("ids").data<std::int64_t>()[0], -5);
  EXPECT_EQ(loaded.at("ids").data<std::int64_t>()[1], std::numeric_limits<std::int64_t>::max());
  // bf16 bits survive unchanged (no trip through float rounding).
  for (std::int64_t i = 0; i < 15; ++i)
    EXPECT_EQ(loaded.at("head.weight").data<BFloat16>()[i].bits,
              state.at("head.weight").data<BFloat16>()[i].bits);
}

TEST_F(Safetensors, StridedTensorsAreWrittenInLogicalOrder) {
  // A channels_last weight is written in NCHW element order, as PyTorch's .contiguous() would;
  // so is a transposed matrix. Saving must not count as a layout permute either.
  Generator gen(3);
  const Tensor cl = rand({2, 3, 2, 2}, MemoryFormat::ChannelsLast, gen);
  ASSERT_TRUE(cl.is_contiguous(MemoryFormat::ChannelsLast));
  ASSERT_FALSE(cl.is_contiguous());
  StateDict state;
  state.insert("w", cl);
  const auto before = permute_count();
  const std::vector<std::byte> bytes = serialize_safetensors(state);
  EXPECT_EQ(permute_count(), before);

  std::vector<std::byte> expected_data;
  for (float v : cl.to_vector()) append_f32(expected_data, v);
  ASSERT_GE(bytes.size(), expected_data.size());
  EXPECT_TRUE(std::equal(expected_data.begin(), expected_data.end(),
                         bytes.end() - static_cast<std::ptrdiff_t>(expected_data.size())));

  const Tensor loaded = parse_safetensors(bytes).at("w");
  EXPECT_TRUE(loaded.is_contiguous());
  EXPECT_TRUE(testing::all_close(loaded, cl, testing::Tolerance::exact()));

  StateDict transposed;
  const Tensor t = randn({3, 4}, {}, gen).permute({1, 0});
  transposed.insert("t", t);
  EXPECT_TRUE(testing::all_close(parse_safetensors(serialize_safetensors(transposed)).at("t"), t,
                                 testing::Tolerance::exact()));
}

TEST_F(Safetensors, EmptyStateDictIsTheEmptyObject) {
  const std::vector<std::byte> bytes = serialize_safetensors(StateDict{});
  EXPECT_EQ(bytes, file_bytes("{}      "));  // padded to 8
  const SafetensorsFile loaded = parse_safetensors_file(bytes);
  EXPECT_TRUE(loaded.tensors.empty());
  EXPECT_TRUE(loaded.metadata.empty());
}

TEST_F(Safetensors, MetadataRoundTripsAndComesFirst) {
  const std::map<std::string, std::string> metadata{{"format", "pt"}, {"note", "é \"q\"\n"}};
  const std::vector<std::byte> bytes = serialize_safetensors(StateDict{}, metadata);
  EXPECT_EQ(bytes, file_bytes(padded(R"({"__metadata__":{"format":"pt","note":"é \"q\"\n"}})")));
  EXPECT_EQ(parse_safetensors_file(bytes).metadata, metadata);

  StateDict state;
  state.insert("x", ones({2}));
  save_safetensors(state, dir_ / "m.safetensors", metadata);
  const SafetensorsFile loaded = read_safetensors_file(dir_ / "m.safetensors");
  EXPECT_EQ(loaded.metadata, metadata);
  EXPECT_TRUE(testing::all_close(loaded.tensors.at("x"), ones({2}), testing::Tolerance::exact()));
}

TEST_F(Safetensors, SaveThenLoadFromDiskLeavesOnlyTheFile) {
  Generator gen(11);
  StateDict state;
  state.insert("a", randn({3, 5}, {}, gen));
  state.insert("b", randn({2, 2, 1, 1}, DType::BFloat16, gen));
  save_safetensors(state, dir_ / "model.safetensors");
  EXPECT_EQ(listing(), std::vector<std::string>{"model.safetensors"});
  EXPECT_EQ(read_raw(dir_ / "model.safetensors"), serialize_safetensors(state));
  const StateDict loaded = load_safetensors(dir_ / "model.safetensors");
  EXPECT_TRUE(testing::all_close(loaded.at("a"), state.at("a"), testing::Tolerance::exact()));
  EXPECT_TRUE(testing::all_close(loaded.at("b"), state.at("b"), testing::Tolerance::exact()));

  // Saving again replaces the file whole.
  StateDict other;
  other.insert("c", zeros({1}));
  save_safetensors(other, dir_ / "model.safetensors");
  EXPECT_EQ(listing(), std::vector<std::string>{"model.safetensors"});
  EXPECT_TRUE(load_safetensors(dir_ / "model.safetensors").contains("c"));
  EXPECT_FALSE(load_safetensors(dir_ / "model.safetensors").contains("a"));
}

// ---------------------------------------------------------------------------------------------
// The format as the Python library writes it

// What safetensors.torch.save_file(state_dict, path, metadata={"format": "pt"}) writes for a
// tiny model: `__metadata__` first, then the tensors by dtype alignment (I64, then F32, then
// BF16), each group by name, offsets contiguous, compact JSON padded with spaces to 8 bytes.
std::vector<std::byte> python_written_file() {
  const std::string header =
      padded(R"({"__metadata__":{"format":"pt"},)"
             R"("bn.num_batches_tracked":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
             R"("bn.running_mean":{"dtype":"F32","shape":[3],"data_offsets":[8,20]},)"
             R"("conv.weight":{"dtype":"F32","shape":[2,1,1,1],"data_offsets":[20,28]},)"
             R"("head.weight":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]}})");
  std::vector<std::byte> data;
  append_le(data, 42, 8);
  for (float v : {0.5f, -1.0f, 2.0f}) append_f32(data, v);
  for (float v : {3.0f, -0.25f}) append_f32(data, v);
  append_le(data, 0x3FC0, 2);  // bf16 1.5
  append_le(data, 0xC010, 2);  // bf16 -2.25
  return file_bytes(header, data);
}

TEST_F(Safetensors, LoadsTheBytesThePythonLibraryWrites) {
  const std::vector<std::byte> bytes = python_written_file();
  const SafetensorsFile file = parse_safetensors_file(bytes);
  EXPECT_EQ(file.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  const StateDict& sd = file.tensors;
  ASSERT_EQ(sd.size(), 4u);
  EXPECT_EQ(sd.at("bn.num_batches_tracked").dtype(), DType::Int64);
  EXPECT_EQ(sd.at("bn.num_batches_tracked").dim(), 0);
  EXPECT_EQ(int64_at(sd.at("bn.num_batches_tracked")), 42);
  EXPECT_EQ(sd.at("bn.running_mean").to_vector(), (std::vector<float>{0.5f, -1.0f, 2.0f}));
  EXPECT_EQ(sd.at("conv.weight").sizes(), (Shape{2, 1, 1, 1}));
  EXPECT_EQ(sd.at("conv.weight").to_vector(), (std::vector<float>{3.0f, -0.25f}));
  EXPECT_EQ(sd.at("head.weight").dtype(), DType::BFloat16);
  EXPECT_EQ(sd.at("head.weight").to_vector(), (std::vector<float>{1.5f, -2.25f}));
  // Our writer produces the same bytes, whatever order the state dict is in.
  EXPECT_EQ(serialize_safetensors(sd, file.metadata), bytes);
}

TEST_F(Safetensors, WriterPadsTheHeaderLikeThePythonLibrary) {
  // One f32 [1,1,2,3] tensor: the 65-byte JSON is padded with 7 spaces to N = 72.
  StateDict state;
  const std::vector<float> values{0, 1, 2, 3, 4, 5};
  state.insert("attn0", from_values(values, {1, 1, 2, 3}));
  std::vector<std::byte> data;
  for (float v : values) append_f32(data, v);
  const std::string json = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(json.size(), 65u);
  EXPECT_EQ(serialize_safetensors(state), file_bytes(json + std::string(7, ' '), data));
}

TEST_F(Safetensors, UnalignedDataLoads) {
  // E12: no header padding (N = 91, older writers) and an f32 tensor at data offset 6, so the
  // f32 values sit at file offsets that are not multiples of 4.
  const std::string header = R"({"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},)"
                             R"("b":{"dtype":"F32","shape":[2],"data_offsets":[6,14]}})";
  ASSERT_NE((8 + header.size() + 6) % 4, 0u);
  std::vector<std::byte> data;
  for (std::uint64_t bits : {0x3F80u, 0x4000u, 0xBF00u}) append_le(data, bits, 2);
  append_f32(data, 1.25f);
  append_f32(data, -7.5f);
  const StateDict sd = parse_safetensors(file_bytes(header, data));
  EXPECT_EQ(sd.at("a").to_vector(), (std::vector<float>{1.0f, 2.0f, -0.5f}));
  EXPECT_EQ(sd.at("b").to_vector(), (std::vector<float>{1.25f, -7.5f}));
}

TEST_F(Safetensors, HeaderOrderNeedNotFollowOffsets) {
  // Tensors may be listed in any order in the header; the offsets decide.
  const std::string header = R"({"second":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                             R"("first":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::vector<std::byte> data;
  append_f32(data, 1.0f);
  append_f32(data, 2.0f);
  const StateDict sd = parse_safetensors(file_bytes(header, data));
  EXPECT_EQ(sd.at("first").item(), 1.0f);
  EXPECT_EQ(sd.at("second").item(), 2.0f);
}

// ---------------------------------------------------------------------------------------------
// Bad inputs (docs/reliability.md E1-E10, E12)

struct BadCase {
  const char* row;
  std::vector<std::byte> bytes;
  std::string expected;  // a substring of the message
  SafetensorsLimits limits = {};
};

std::string entry(const std::string& name, const std::string& dtype, const std::string& shape,
                  const std::string& offsets) {
  return fmt::format(R"("{}":{{"dtype":{},"shape":{},"data_offsets":{}}})", name, dtype, shape,
                     offsets);
}

// A header object from its entries.
std::string object(std::initializer_list<std::string> entries) {
  return fmt::format("{{{}}}", fmt::join(entries, ","));
}

std::vector<BadCase> bad_cases() {
  const auto f32 = [](const std::string& name, const std::string& shape, const std::string& off) {
    return entry(name, "\"F32\"", shape, off);
  };
  const auto one = [](const std::string& e, std::size_t data = 0) {
    return file_bytes(object({e}), zeros_bytes(data));
  };
  SafetensorsLimits huge_header;
  huge_header.max_header_bytes = std::numeric_limits<std::uint64_t>::max();
  SafetensorsLimits two_tensors;
  two_tensors.max_tensors = 2;
  SafetensorsLimits four_bytes;
  four_bytes.max_total_bytes = 4;
  std::vector<std::byte> jpeg{std::byte{0xFF}, std::byte{0xD8}, std::byte{0xFF}, std::byte{0xE0},
                              std::byte{0x00}, std::byte{0x10}, std::byte{0x4A}, std::byte{0x46},
                              std::byte{0x49}, std::byte{0x46}, std::byte{0x00}, std::byte{0x01}};
  return {
      // E1
      {"E1 empty", {}, "has 0 bytes, fewer than the 8-byte header length (HeaderTooSmall)"},
      {"E1 7 bytes", zeros_bytes(7), "has 7 bytes, fewer than the 8-byte header length"},
      // E2
      {"E2 N over limit", file_bytes("{}", {}, 100'000'001),
       "header length 100000001 exceeds the limit of 100000000 bytes (HeaderTooLarge)"},
      {"E2 N = 2^63", file_bytes("{}", {}, std::uint64_t{1} << 63), "HeaderTooLarge"},
      {"jpeg", jpeg, "not a safetensors file"},
      {"text", to_bytes("just some words in a text file\n"), "not a safetensors file"},
      // E3
      {"E3 N > size", file_bytes("{}", {}, 100),
       "header length 100 runs past the end of the 10-byte file (InvalidHeaderLength)"},
      {"E3 8 + N overflows", file_bytes("{}", {}, std::numeric_limits<std::uint64_t>::max()),
       "InvalidHeaderLength", huge_header},
      // E4
      {"E4 invalid UTF-8", file_bytes("{\"a\xff\":{}}"), "not valid UTF-8 at byte 3 (0xff"},
      {"E4 overlong UTF-8", file_bytes("{\"\xc0\xaf\":{}}"), "not valid UTF-8 at byte 2"},
      {"E4 UTF-16 surrogate", file_bytes("{\"\xed\xa0\x80\":{}}"), "not valid UTF-8 at byte 2"},
      {"E4 truncated UTF-8", file_bytes("{\"\xe2\x82"), "not valid UTF-8 at byte 2"},
      {"E4 leading space", file_bytes(" {}"), "does not start with '{' (first byte 0x20"},
      {"E4 array top level", file_bytes("[]"), "does not start with '{'"},
      {"E4 empty header", file_bytes(""), "does not start with '{'"},
      {"E4 invalid JSON", file_bytes("{\"a\":"), "header is not valid JSON"},
      {"E4 trailing garbage", file_bytes("{} x"), "header is not valid JSON"},
      {"E4 NUL padding", file_bytes(std::string("{}\0\0", 4)),
       "not valid JSON (InvalidHeaderDeserialization): NUL byte at byte 2"},
      {"E4 NUL then garbage", file_bytes(std::string("{}\0{\"x\":1}", 10)), "NUL byte at byte 2"},
      {"E4 entry not an object", file_bytes(R"({"w":[1,2]})"),
       "tensor 'w': entry must be an object with dtype, shape and data_offsets, got an array"},
      // E5
      {"E5 duplicate tensor",
       file_bytes(object({f32("w", "[1]", "[0,4]"), f32("w", "[1]", "[4,8]")}), zeros_bytes(8)),
       "header has the key 'w' twice"},
      {"E5 duplicate field",
       file_bytes(R"({"w":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                  zeros_bytes(4)),
       "tensor 'w': field 'dtype' twice"},
      {"E5 duplicate metadata",
       file_bytes(R"({"__metadata__":{"k":"a"},"__metadata__":{"k":"b"}})"),
       "header has the key '__metadata__' twice"},
      {"E5 duplicate metadata key", file_bytes(R"({"__metadata__":{"k":"a","k":"b"}})"),
       "__metadata__ has the key 'k' twice"},
      // E6
      {"E6 gap",
       file_bytes(object({f32("a", "[1]", "[0,4]"), f32("b", "[1]", "[8,12]")}), zeros_bytes(12)),
       "tensor 'b': data_offsets [8, 12] leave a gap: bytes [4, 8) after tensor 'a'"},
      {"E6 overlap",
       file_bytes(object({f32("a", "[2]", "[0,8]"), f32("b", "[2]", "[4,12]")}), zeros_bytes(12)),
       "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"},
      {"E6 same offsets twice",
       file_bytes(object({f32("a", "[1]", "[0,4]"), f32("b", "[1]", "[0,4]")}), zeros_bytes(4)),
       "overlap tensor 'a' [0, 4]"},
      {"E6 end before begin", one(f32("w", "[0]", "[8,4]"), 8),
       "tensor 'w': data_offsets [8, 4] end before they begin (InvalidOffset)"},
      {"E6 not starting at 0", one(f32("w", "[1]", "[4,8]"), 8),
       "tensor 'w': data_offsets [4, 8]: the first tensor must start at byte 0"},
      {"E6 data left over", one(f32("w", "[1]", "[0,4]"), 8),
       "the tensors end at byte 4 (tensor 'w') but the data section holds 8 bytes "
       "(MetadataIncompleteBuffer)"},
      {"E6 data missing", one(f32("w", "[2]", "[0,8]"), 4),
       "end at byte 8 (tensor 'w') but the data section holds 4 bytes"},
      {"E6 no tensors, stray data", file_bytes("{}", zeros_bytes(4)),
       "the tensors end at byte 0 but the data section holds 4 bytes"},
      // E7
      {"E7 element count overflows", one(f32("w", "[4611686018427387904,4]", "[0,4]"), 4),
       "tensor 'w': shape [4611686018427387904, 4] has too many elements (ValidationOverflow)"},
      {"E7 byte count overflows", one(f32("w", "[2305843009213693952,2]", "[0,4]"), 4),
       "tensor 'w': shape [2305843009213693952, 2] of F32 is too many bytes (ValidationOverflow)"},
      {"E7 dimension beyond int64", one(f32("w", "[18446744073709551615]", "[0,4]"), 4),
       "tensor 'w': shape entry 0 (18446744073709551615) is too large"},
      {"E7 offsets disagree with shape", one(f32("w", "[2,3]", "[0,8]"), 8),
       "tensor 'w': data_offsets [0, 8] hold 8 bytes, but F32 shape [2, 3] needs 24 "
       "(TensorInvalidInfo)"},
      // E8
      {"E8 unknown dtype", one(entry("w", "\"NOTADTYPE\"", "[1]", "[0,4]"), 4),
       "tensor 'w': unknown dtype 'NOTADTYPE'"},
      {"E8 unsupported dtype", one(entry("w", "\"F16\"", "[2]", "[0,4]"), 4),
       "tensor 'w' has dtype F16, unsupported (supported: F32, BF16, I64)"},
      {"E8 lowercase dtype", one(entry("w", "\"f32\"", "[1]", "[0,4]"), 4), "unknown dtype 'f32'"},
      {"E8 dtype not a string", one(entry("w", "4", "[1]", "[0,4]"), 4),
       "tensor 'w': dtype must be a string, got number 4"},
      {"E8 negative shape", one(f32("w", "[-4,1]", "[0,4]"), 4),
       "tensor 'w': shape entry 0 must be a non-negative integer, got negative number -4"},
      {"E8 float shape", one(f32("w", "[1,2.0]", "[0,8]"), 8),
       "tensor 'w': shape entry 1 must be a non-negative integer, got non-integer number 2.0"},
      {"E8 huge shape literal", one(f32("w", "[1e400]", "[0,4]"), 4),
       "header is not valid JSON (InvalidHeaderDeserialization) near byte 34: "
       "[json.exception.out_of_range.406] number overflow parsing '1e400'"},
      {"E8 shape not an array", one(f32("w", "\"2x3\"", "[0,24]"), 24),
       "tensor 'w': shape must be an array of non-negative integers, got string \"2x3\""},
      {"E8 nested shape", one(f32("w", "[[1]]", "[0,4]"), 4),
       "tensor 'w': shape entry 0 must be a non-negative integer, got an array"},
      {"E8 float offsets", one(f32("w", "[1]", "[0.0,4]"), 4),
       "tensor 'w': data_offsets entry 0 must be a non-negative integer, got non-integer "
       "number 0.0"},
      {"E8 negative offsets", one(f32("w", "[1]", "[-4,0]"), 4),
       "data_offsets entry 0 must be a non-negative integer, got negative number -4"},
      {"E8 three offsets", one(f32("w", "[1]", "[0,4,8]"), 4),
       "tensor 'w': data_offsets has more than 2 entries"},
      {"E8 one offset", one(f32("w", "[1]", "[4]"), 4),
       "tensor 'w': data_offsets has 1 entries, expected 2"},
      {"E8 offsets null", one(f32("w", "[1]", "null"), 4),
       "tensor 'w': data_offsets must be an array of two non-negative integers, got null"},
      {"E8 missing field", file_bytes(R"({"w":{"dtype":"F32","shape":[1]}})"),
       "tensor 'w': missing field 'data_offsets'"},
      {"E8 unknown field",
       file_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"offsets":[0,4]}})",
                  zeros_bytes(4)),
       "tensor 'w': unknown field 'offsets'"},
      // E9
      {"E9 tensor count over the cap",
       file_bytes(
           object({f32("a", "[0]", "[0,0]"), f32("b", "[0]", "[0,0]"), f32("c", "[0]", "[0,0]")})),
       "header has more than 2 tensors (the limit SafetensorsLimits::max_tensors); at 'c'",
       two_tensors},
      {"data over max_total_bytes", one(f32("w", "[2]", "[0,8]"), 8),
       "data section of 8 bytes exceeds the limit of 4 bytes", four_bytes},
      // E10
      {"E10 number value", file_bytes(R"({"__metadata__":{"format":"pt","epoch":3}})"),
       "__metadata__ value for 'epoch' must be a string, got number 3"},
      {"E10 object value", file_bytes(R"({"__metadata__":{"cfg":{"a":"b"}}})"),
       "__metadata__ value for 'cfg' must be a string, got an object"},
      {"E10 null value", file_bytes(R"({"__metadata__":{"x":null}})"),
       "__metadata__ value for 'x' must be a string, got null"},
      {"E10 not an object", file_bytes(R"({"__metadata__":["pt"]})"),
       "__metadata__ must be an object of strings, got an array"},
  };
}

TEST_F(Safetensors, RejectsEveryBadInputWithANamedError) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.row);
    const std::string message =
        error_of([&] { parse_safetensors(c.bytes, "bad.safetensors", c.limits); });
    EXPECT_THAT(message, HasSubstr("safetensors 'bad.safetensors': "));
    EXPECT_THAT(message, HasSubstr(c.expected));
  }
}

TEST_F(Safetensors, ManyTinyTensorsParseFastAndTheCapApplies) {
  // E9: 100 000 entries parse in linear time; a cap one below the count refuses them.
  constexpr int kCount = 100'000;
  std::string header = "{";
  std::vector<std::byte> data;
  for (int i = 0; i < kCount; ++i) {
    if (i) header += ",";
    header +=
        entry(fmt::format("t{}", i), "\"F32\"", "[1]", fmt::format("[{},{}]", 4 * i, 4 * i + 4));
    append_f32(data, static_cast<float>(i));
  }
  header += "}";
  const std::vector<std::byte> bytes = file_bytes(header, data);

  const auto start = std::chrono::steady_clock::now();
  const StateDict sd = parse_safetensors(bytes);
  const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start);
  ASSERT_EQ(sd.size(), static_cast<std::size_t>(kCount));
  EXPECT_EQ(sd.at("t99999").item(), 99999.0f);
  // Linear parsing takes well under a second here (a few under sanitizers); a quadratic one
  // (10^10 steps) takes minutes, so this bound catches it without flaking on a loaded machine.
  EXPECT_LT(seconds.count(), 60.0) << "parsing looks super-linear";

  SafetensorsLimits cap;
  cap.max_tensors = kCount - 1;
  EXPECT_THAT(error_of([&] { parse_safetensors(bytes, "many", cap); }),
              HasSubstr("more than 99999 tensors"));
}

// ---------------------------------------------------------------------------------------------
// Files

TEST_F(Safetensors, LoadRefusesWhatIsNotARegularSafetensorsFile) {
  EXPECT_THAT(error_of([&] { load_safetensors(dir_ / "missing.safetensors"); }),
              HasSubstr("missing.safetensors': cannot open: No such file or directory"));
  EXPECT_THAT(error_of([&] { load_safetensors(dir_); }),
              HasSubstr("is a directory, expected a regular file"));
  const fs::path fifo = dir_ / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // Would block forever in a plain open() with no writer.
  EXPECT_THAT(error_of([&] { load_safetensors(fifo); }),
              HasSubstr("is a FIFO, expected a regular file"));

  const fs::path text = dir_ / "notes.txt";
  write_raw(text, to_bytes("hello, this is not a tensor file\n"));
  EXPECT_THAT(error_of([&] { load_safetensors(text); }), HasSubstr("not a safetensors file"));
  EXPECT_THAT(error_of([&] { load_safetensors(text); }), HasSubstr("notes.txt"));

  const fs::path truncated = dir_ / "cut.safetensors";
  std::vector<std::byte> bytes = python_written_file();
  bytes.pop_back();
  write_raw(truncated, bytes);
  EXPECT_THAT(error_of([&] { load_safetensors(truncated); }),
              HasSubstr("cut.safetensors': the tensors end at byte 32 (tensor 'head.weight') but "
                        "the data section holds 31 bytes"));

  const fs::path good = dir_ / "good.safetensors";
  write_raw(good, python_written_file());
  EXPECT_EQ(int64_at(load_safetensors(good).at("bn.num_batches_tracked")), 42);
}

TEST_F(Safetensors, SaveToAnImpossiblePathThrowsAndLeavesNothing) {
  StateDict state;
  state.insert("w", ones({4}));
  EXPECT_THAT(error_of([&] { save_safetensors(state, dir_ / "no" / "such" / "dir" / "x.st"); }),
              HasSubstr("cannot create a temporary file next to it: No such file or directory"));
  // A parent that is a file is not writable as a directory, even for root.
  write_raw(dir_ / "file", to_bytes("x"));
  EXPECT_THAT(error_of([&] { save_safetensors(state, dir_ / "file" / "x.st"); }),
              HasSubstr("Not a directory"));
  // The target is an existing directory: the rename fails and the temporary file goes away.
  fs::create_directory(dir_ / "taken");
  EXPECT_THAT(error_of([&] { save_safetensors(state, dir_ / "taken"); }),
              HasSubstr("cannot rename"));
  EXPECT_EQ(listing(), (std::vector<std::string>{"file", "taken"}));
  EXPECT_TRUE(fs::is_empty(dir_ / "taken"));
}

TEST_F(Safetensors, SaveRefusesBadStateDictsBeforeWriting) {
  const fs::path target = dir_ / "x.safetensors";
  StateDict undefined;
  undefined.insert("w", Tensor());
  EXPECT_THAT(error_of([&] { save_safetensors(undefined, target); }),
              HasSubstr("x.safetensors': tensor 'w' is undefined"));
  StateDict reserved;
  reserved.insert("__metadata__", ones({1}));
  EXPECT_THAT(error_of([&] { save_safetensors(reserved, target); }),
              HasSubstr("cannot be named '__metadata__'"));
  StateDict not_utf8;
  not_utf8.insert("w\xff", ones({1}));
  EXPECT_THAT(error_of([&] { save_safetensors(not_utf8, target); }),
              HasSubstr("tensor name 'w\xff' is not valid UTF-8"));
  EXPECT_THAT(error_of([&] {
                save_safetensors(StateDict{}, target, {{"k", std::string("\xc0\x80")}});
              }),
              HasSubstr("metadata value"));
  EXPECT_TRUE(listing().empty());
}

// Makes writes past `bytes` fail with EFBIG (SIGXFSZ ignored) while alive: a real I/O failure
// in the middle of a save.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    saved_handler_ = ::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved_;
    limited.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &limited) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    ::signal(SIGXFSZ, saved_handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  sighandler_t saved_handler_{};
  bool ok_ = false;
};

TEST_F(Safetensors, FailureMidWriteLeavesNoPartialFileAndKeepsTheOldOne) {
  StateDict state;
  state.insert("big", zeros({64, 1024}));  // 256 KiB of data
  const fs::path fresh = dir_ / "fresh.safetensors";
  const fs::path existing = dir_ / "existing.safetensors";
  const std::vector<std::byte> old_bytes = python_written_file();
  write_raw(existing, old_bytes);
  std::string fresh_error, existing_error;
  {
    FileSizeLimit limit(64 * 1024);
    ASSERT_TRUE(limit.ok());
    fresh_error = error_of([&] { save_safetensors(state, fresh); });
    existing_error = error_of([&] { save_safetensors(state, existing); });
  }
  EXPECT_THAT(fresh_error, HasSubstr("fresh.safetensors': write failed"));
  EXPECT_THAT(existing_error, HasSubstr("existing.safetensors': write failed"));
  EXPECT_EQ(listing(), std::vector<std::string>{"existing.safetensors"});
  EXPECT_EQ(read_raw(existing), old_bytes);
  // With the limit gone the same save works.
  save_safetensors(state, fresh);
  EXPECT_EQ(load_safetensors(fresh).at("big").sizes(), (Shape{64, 1024}));
}

}  // namespace
}  // namespace refold::io
