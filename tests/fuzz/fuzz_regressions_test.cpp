// Replays every input under tests/data/fuzz_regressions/<target>/ through the same body the
// libFuzzer target runs (fuzz/targets.h): each must be refused with refold::Error — no crash, no
// other exception, and (in the sanitizer build) no sanitizer report. A crash scripts/fuzz.sh finds
// is minimized and committed there with its fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "../../fuzz/targets.h"

namespace refold {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> read_bytes(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
  return bytes;
}

// Runs `body` on every file of the target's folder; returns how many there were.
template <typename Body>
int replay(const std::string& target, Body body) {
  const fs::path dir = fs::path(REFOLD_TEST_DATA_DIR) / "fuzz_regressions" / target;
  int count = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().filename() == "README.md") continue;
    SCOPED_TRACE(entry.path().string());
    const std::vector<std::byte> bytes = read_bytes(entry.path());
    std::string refusal;
    EXPECT_NO_THROW(refusal = body(std::span<const std::byte>(bytes)));
    EXPECT_FALSE(refusal.empty()) << "accepted; a regression input must be refused";
    ++count;
  }
  return count;
}

TEST(FuzzRegressions, OnnxLoadRefusesEachCase) {
  EXPECT_GT(replay("onnx_load_fuzzer", fuzz::onnx_load_one), 0);
}

TEST(FuzzRegressions, SafetensorsRefusesEachCase) {
  EXPECT_GT(replay("safetensors_fuzzer", fuzz::safetensors_one), 0);
}

TEST(FuzzRegressions, OptimizeRunRefusesEachCase) {
  EXPECT_GT(replay("optimize_run_fuzzer", fuzz::optimize_run_one), 0);
}

// The fuzz bodies accept what they should: a seed model runs, a seed safetensors file parses.
TEST(FuzzTargets, AcceptValidSeeds) {
  const fs::path corpus = fs::path(REFOLD_TEST_DATA_DIR) / ".." / ".." / "fuzz" / "corpus";
  for (const char* seed :
       {"conv_bn_relu", "repvgg_branches", "pool_concat_resize", "gemm_flatten"}) {
    SCOPED_TRACE(seed);
    const auto bytes = read_bytes(corpus / "optimize_run_fuzzer" / (std::string(seed) + ".onnx"));
    ASSERT_FALSE(bytes.empty());
    EXPECT_EQ(fuzz::optimize_run_one(bytes), "");
    EXPECT_EQ(fuzz::onnx_load_one(bytes), "");
  }
  const auto model = read_bytes(corpus / "optimize_run_fuzzer" / "conv_bn_relu.onnx");
  const auto weights = read_bytes(corpus / "safetensors_fuzzer" / "conv_bn.safetensors");
  ASSERT_FALSE(weights.empty());
  EXPECT_EQ(fuzz::safetensors_one(weights), "");
  EXPECT_EQ(fuzz::small_input_shape(*onnx::load_from_memory(model, "seed")),
            (std::vector<std::int64_t>{1, 2, 8, 8}));
}

}  // namespace
}  // namespace refold
