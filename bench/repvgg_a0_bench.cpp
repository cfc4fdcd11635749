// Issue 3's per-model benchmark: RepVGG-A0 in its deploy form (bench/repvgg_a0.h after
// refold::reparameterize: 22 3×3 convs with bias and ReLU, global average pool, linear), with
// the ReLUs fused into the convs (fuse_deployed_activations), at 224×224:
//   batch {1, 8} × threads {1, 2} × {NCHW, NHWC}, float32;
//   bfloat16 only with --bf16 (batch 1, 2 threads, NHWC, one repetition of one iteration: this
//   CPU has no avx512_bf16, so bf16 convs run on the reference kernels and take seconds).
// NCHW = contiguous weights and input; NHWC = convert_conv2d_weight_memory_format(ChannelsLast)
// and a channels_last input. Wall time per forward; aggregates: mean, median, stddev, cv, p90
// (nearest rank). Counters:
//   GFLOP/s        deploy FLOPs (reparameterize's count + the classifier's 2·1280·1000) ÷ time
//   peak_act_MB    memory_stats().peak_bytes − current_bytes before the forward (the forward's
//                  own tensors: activations, the output, any permute copies), batch as run
//   largest_act_MB the largest single activation (input or any block's output) of that batch
//   peak_ratio     peak_act_MB ÷ largest_act_MB (issue 3, target 5: ≤ 3 at batch 1)
//
//   build-d-bench/bench/repvgg_a0_bench --benchmark_repetitions=20
//       --benchmark_report_aggregates_only=true
//   build-d-bench/bench/repvgg_a0_bench --export=DIR   writes DIR/repvgg_a0_deploy.safetensors
//       (the deploy weights under their state_dict names) and DIR/repvgg_a0_io.safetensors
//       ("input" 1×3×224×224, and "output", refold's NHWC 2-thread result), then exits;
//       bench/compare_torch.py loads them.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "refold/io/safetensors.h"
#include "refold/memory.h"
#include "refold/memory_format.h"
#include "refold/nn/utils.h"
#include "refold/reparam/reparameterize.h"
#include "refold/tensor.h"
#include "refold/threads.h"
#include "repvgg_a0.h"

namespace {

using refold::MemoryFormat;
constexpr std::int64_t kImage = 224;

// p90 by nearest rank: the smallest value with at least 90% of the repetitions at or below it.
double p90(const std::vector<double>& v) {
  if (v.empty()) return 0;
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(sorted.size())));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "repvgg_a0_bench: %s\n", message.c_str());
  std::exit(1);
}

struct Model {
  std::shared_ptr<refold::bench::RepVGGA0> net;
  double flops_per_image = 0;
};

// The deploy form with fused ReLUs, weights in `format`, `dtype`.
Model make_deploy(MemoryFormat format, refold::DType dtype) {
  Model m{refold::bench::make_repvgg_a0(), 0};
  const refold::ReparamReport report =
      refold::reparameterize(*m.net, {.input_shape = refold::Shape{1, 3, kImage, kImage}});
  if (report.converted.size() != 22 || !report.left_as_is.empty() || !report.flops_after)
    die("expected all 22 RepVGGBlocks converted with FLOPs counted, got:\n" + report.to_string());
  const std::size_t fused = refold::bench::fuse_deployed_activations(*m.net);
  if (fused != 22) die("expected 22 fused conv+ReLU pairs, got " + std::to_string(fused));
  if (dtype != refold::DType::Float32) m.net->to(dtype);
  refold::nn::utils::convert_conv2d_weight_memory_format(*m.net, format);
  m.flops_per_image = static_cast<double>(*report.flops_after) + 2.0 * 1280 * 1000;
  return m;
}

void export_files(const std::filesystem::path& dir) {
  refold::set_num_threads(2);
  Model m = make_deploy(MemoryFormat::ChannelsLast, refold::DType::Float32);
  refold::Generator gen(42);
  const refold::Tensor input = refold::randn({1, 3, kImage, kImage}, {}, gen);
  const refold::Tensor output = (*m.net)(input.contiguous(MemoryFormat::ChannelsLast));
  std::filesystem::create_directories(dir);
  refold::io::save_safetensors(m.net->state_dict(), dir / "repvgg_a0_deploy.safetensors");
  refold::StateDict io;
  io.insert("input", input);
  io.insert("output", output.contiguous());
  refold::io::save_safetensors(io, dir / "repvgg_a0_io.safetensors");
  std::printf("wrote %s and %s\n", (dir / "repvgg_a0_deploy.safetensors").c_str(),
              (dir / "repvgg_a0_io.safetensors").c_str());
}

void register_case(const std::string& dtype_name, refold::DType dtype, MemoryFormat format,
                   std::int64_t batch, int threads, bool single_shot) {
  refold::set_num_threads(threads);
  const Model m = make_deploy(format, dtype);
  refold::Generator gen(42);
  const refold::Tensor input = refold::randn({batch, 3, kImage, kImage}, {}, gen).to(dtype, format);
  const std::size_t largest = refold::bench::largest_activation_bytes(*m.net, input);
  const double flops = m.flops_per_image * static_cast<double>(batch);
  const std::string name = "RepVGG_A0_deploy/" + dtype_name + "/" +
                           (format == MemoryFormat::ChannelsLast ? "nhwc" : "nchw") +
                           "/batch:" + std::to_string(batch) +
                           "/threads:" + std::to_string(threads);
  auto* b = benchmark::RegisterBenchmark(
      name.c_str(), [net = m.net, input, flops, largest, threads](benchmark::State& state) {
        refold::set_num_threads(threads);
        (*net)(input);  // untimed: primitives for this thread count
        refold::reset_peak_memory();
        const std::size_t before = refold::memory_stats().current_bytes;
        double peak = 0;
        for (auto _ : state) {
          refold::Tensor y = (*net)(input);
          benchmark::DoNotOptimize(y.data_ptr());
        }
        peak = static_cast<double>(refold::memory_stats().peak_bytes - before);
        state.counters["GFLOP/s"] =
            benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
        state.counters["peak_act_MB"] = peak / 1e6;
        state.counters["largest_act_MB"] = static_cast<double>(largest) / 1e6;
        state.counters["peak_ratio"] = peak / static_cast<double>(largest);
      });
  b->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("p90", p90);
  if (single_shot)
    b->Iterations(1)->Repetitions(1);
  else
    b->MinWarmUpTime(0.3);
}

}  // namespace

int main(int argc, char** argv) {
  bool bf16 = false;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--export=")) {
      export_files(std::string(arg.substr(9)));
      return 0;
    }
    if (arg == "--bf16")
      bf16 = true;
    else
      rest.push_back(argv[i]);
  }
  int rest_argc = static_cast<int>(rest.size());

  for (std::int64_t batch : {1, 8})
    for (int threads : {1, 2})
      for (MemoryFormat format : {MemoryFormat::Contiguous, MemoryFormat::ChannelsLast})
        register_case("f32", refold::DType::Float32, format, batch, threads, false);
  if (bf16)
    register_case("bf16", refold::DType::BFloat16, MemoryFormat::ChannelsLast, 1, 2, true);
  else
    std::fprintf(stderr,
                 "repvgg_a0_bench: bf16 not registered (pass --bf16; without avx512_bf16 it runs "
                 "on the reference kernels: one single-shot run at batch 1)\n");

  benchmark::Initialize(&rest_argc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(rest_argc, rest.data())) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
