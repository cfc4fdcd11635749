// What a graph costs per node, apart from its kernels: a chain of N Relu nodes over a 32-float
// tensor (the kernels' own work is a few nanoseconds), written to ONNX once, then
//   BM_Load      onnx::load of the file (parse, validate, build the graph);
//   BM_Run       Graph::run of the imported graph (what `refold run --no-optimize` pays per run);
//   BM_Optimize  passes::optimize of a freshly imported graph (the whole pipeline).
// Each reports ns_per_node; a cost linear in N keeps it flat across N (docs/architecture.md,
// "Cost linear in the graph's size"). Targets: run ≤ 2 µs per node (10,000 nodes in under
// 50 ms), optimize at most O(N log N) (100,000 nodes in under 5 s).
//   build/bench/graph_scale_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "refold/graph/graph.h"
#include "refold/nn/activation.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"
#include "refold/tensor.h"

namespace {

using namespace refold;

constexpr std::int64_t kValues = 32;

// The chain x -> Relu -> Relu -> … -> y as an ONNX file, written once per length.
std::filesystem::path relu_chain(std::int64_t length) {
  static std::map<std::int64_t, std::filesystem::path> made;
  if (auto it = made.find(length); it != made.end()) return it->second;
  graph::Graph g;
  const std::vector<graph::Dim> shape{{1, ""}, {kValues, ""}};
  g.inputs.push_back({"x", 1, shape});
  std::string value = "x";
  for (std::int64_t i = 0; i < length; ++i) {
    graph::Node n;
    n.name = "relu_" + std::to_string(i);
    n.op_type = "Relu";
    n.inputs = {value};
    value = i + 1 == length ? "y" : "v_" + std::to_string(i);
    n.outputs = {value};
    n.module = std::make_shared<nn::ReLU>();
    g.add_node(std::move(n));
  }
  g.outputs.push_back({"y", 1, shape});
  const auto path = std::filesystem::temp_directory_path() /
                    ("refold_relu_chain_" + std::to_string(length) + ".onnx");
  onnx::save(g, path);
  return made[length] = path;
}

void per_node(benchmark::State& state) {
  state.counters["ns_per_node"] = benchmark::Counter(
      static_cast<double>(state.range(0)) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_Load(benchmark::State& state) {
  const auto path = relu_chain(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(onnx::load(path));
  per_node(state);
}

void BM_Run(benchmark::State& state) {
  const auto g = onnx::load(relu_chain(state.range(0)));
  const Tensor x = randn({1, kValues});
  for (auto _ : state) benchmark::DoNotOptimize(g->run({x}));
  per_node(state);
}

void BM_Optimize(benchmark::State& state) {
  const auto path = relu_chain(state.range(0));
  for (auto _ : state) {
    state.PauseTiming();
    const auto g = onnx::load(path);
    state.ResumeTiming();
    benchmark::DoNotOptimize(passes::optimize(*g));
  }
  per_node(state);
}

void Lengths(benchmark::internal::Benchmark* b) {
  for (std::int64_t n : {1000, 10000, 20000, 100000}) b->Arg(n);
  b->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime()->UseRealTime();
}

BENCHMARK(BM_Load)->Apply(Lengths);
BENCHMARK(BM_Run)->Apply(Lengths);
BENCHMARK(BM_Optimize)->Apply(Lengths);

}  // namespace

BENCHMARK_MAIN();
