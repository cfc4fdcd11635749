// The bodies of the libFuzzer targets, shared with tests/fuzz/fuzz_regressions_test.cpp so that
// every committed crash case replays exactly what the fuzzer ran. Each takes arbitrary bytes and
// returns "" when the input was accepted, or refold::Error's message when it was refused; any
// other exception, crash or sanitizer report is a bug.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/io/safetensors.h"
#include "refold/memory.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"
#include "refold/tensor.h"

namespace refold::fuzz {

// Budgets far below libFuzzer's -rss_limit_mb (2 GiB in scripts/fuzz.sh): an input that makes
// refold allocate beyond them must be refused, not attempted.
inline onnx::LoadOptions load_options() {
  onnx::LoadOptions options;
  options.max_memory = std::uint64_t{64} << 20;
  options.max_folded_bytes = std::uint64_t{1} << 20;
  options.max_nodes = 10'000;
  return options;
}

// Bytes → model.onnx in a private empty folder → onnx::load, as a user's model would go, so that
// the file-size check and external-data resolution (which can only miss) run too. A graph
// load() returns must verify.
inline std::string onnx_load_one(std::span<const std::byte> bytes) {
  static const std::filesystem::path file = [] {
    const auto dir =
        std::filesystem::temp_directory_path() / ("refold_onnx_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    return dir / "model.onnx";
  }();
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
  }
  try {
    onnx::load(file, load_options())->verify();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Bytes → parse_safetensors_file; what parses must serialize and parse back.
inline std::string safetensors_one(std::span<const std::byte> bytes) {
  io::SafetensorsLimits limits;
  limits.max_header_bytes = 1 << 20;
  limits.max_tensors = 10'000;
  limits.max_total_bytes = std::uint64_t{64} << 20;
  try {
    io::SafetensorsFile parsed = io::parse_safetensors_file(bytes, "fuzz", limits);
    io::parse_safetensors_file(io::serialize_safetensors(parsed.tensors, parsed.metadata),
                               "fuzz (rewritten)", limits);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// The input shape optimize_run_one runs a graph on, or empty: a single float input whose
// declared dims are all static, ≥ 1 and ≤ those of 1×4×16×16 (a lower rank matches from the
// right), so that running costs little whatever the model.
inline std::vector<std::int64_t> small_input_shape(const graph::Graph& graph) {
  if (graph.inputs.size() != 1) return {};
  const graph::ValueInfo& in = graph.inputs[0];
  if (in.elem_type != 1 || !in.shape || in.shape->empty() || in.shape->size() > 4) return {};
  static constexpr std::int64_t limit[4] = {1, 4, 16, 16};
  const std::size_t offset = 4 - in.shape->size();
  std::vector<std::int64_t> shape;
  for (std::size_t i = 0; i < in.shape->size(); ++i) {
    const graph::Dim& d = (*in.shape)[i];
    if (!d.is_static() || d.value < 1 || d.value > limit[offset + i]) return {};
    shape.push_back(d.value);
  }
  return shape;
}

// Sets the process-wide tensor memory limit (refold/memory.h) for one scope, then restores it.
class ScopedMemoryLimit {
 public:
  explicit ScopedMemoryLimit(std::size_t bytes) : previous_(memory_limit()) {
    set_memory_limit(bytes);
  }
  ScopedMemoryLimit(const ScopedMemoryLimit&) = delete;
  ScopedMemoryLimit& operator=(const ScopedMemoryLimit&) = delete;
  ~ScopedMemoryLimit() { set_memory_limit(previous_); }

 private:
  std::size_t previous_;
};

// Bytes → load_from_memory → passes::optimize → verify → run on a random small input. The run's
// tensors are bounded as `refold run --max-memory` bounds them (docs/reliability.md G1): a Pad or
// Resize whose output would be terabytes is refused, not attempted. The bound is 64 MiB: a graph
// of reference ops over 256 MiB tensors took 10 s in the sanitizer build, libFuzzer's time limit
// for one input, without finding anything a smaller tensor would not.
inline std::string optimize_run_one(std::span<const std::byte> bytes) {
  onnx::LoadOptions options = load_options();
  options.max_memory = std::uint64_t{16} << 20;
  options.max_nodes = 1'000;
  const ScopedMemoryLimit limit(memory_stats().current_bytes + (std::size_t{64} << 20));
  try {
    auto graph = onnx::load_from_memory(bytes, "fuzz.onnx", {}, options);
    const std::vector<std::int64_t> shape = small_input_shape(*graph);
    passes::optimize(*graph);
    graph->verify();
    if (!shape.empty()) {
      Generator gen(0);
      graph->run({randn(shape, {}, gen)});
    }
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

}  // namespace refold::fuzz
