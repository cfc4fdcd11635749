// Issue 4's benchmark: RepVGG-A0 (bench/repvgg_a0.h) in training form vs after
// refold::reparameterize, each with NCHW weights and activations and with NHWC
// (convert_conv2d_weight_memory_format ChannelsLast + a channels_last input), batch 1 and 8,
// 224×224, 2 threads. Time is wall time per forward; aggregates are the median and the p90
// (nearest rank) of the repetitions. The re-parameterized form runs with each block's ReLU fused
// into its conv (bench/repvgg_a0.h: fuse_deployed_activations). GFLOP/s uses the deploy form's
// FLOPs for both forms (the same work, done with more or fewer ops), so the two forms' rates
// compare like their times. Before timing, each pair (training vs re-parameterized, same layout)
// must agree within docs/testing.md's re-parameterization tolerance (refold::verify); otherwise the
// program aborts.
//   build-bench/bench/reparam_bench --benchmark_repetitions=20
//   --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "refold/memory_format.h"
#include "refold/nn/utils.h"
#include "refold/reparam/reparameterize.h"
#include "refold/tensor.h"
#include "refold/threads.h"
#include "refold/verify.h"
#include "repvgg_a0.h"

namespace {

using refold::MemoryFormat;

constexpr int kThreads = 2;
constexpr std::int64_t kImage = 224;

// p90 by nearest rank: the smallest value with at least 90% of the repetitions at or below it.
double p90(const std::vector<double>& v) {
  if (v.empty()) return 0;
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const auto rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(sorted.size())));
  return sorted[std::max<std::size_t>(rank, 1) - 1];
}

struct Variant {
  std::string name;
  std::shared_ptr<refold::nn::Module> model;
  MemoryFormat format;
};

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "reparam_bench: %s\n", message.c_str());
  std::abort();
}

}  // namespace

int main(int argc, char** argv) {
  refold::set_num_threads(kThreads);

  // Four copies of the same model (same seed): training and re-parameterized, NCHW and NHWC.
  auto train_nchw = refold::bench::make_repvgg_a0();
  auto train_nhwc = refold::bench::make_repvgg_a0();
  auto fused_nchw = refold::bench::make_repvgg_a0();
  auto fused_nhwc = refold::bench::make_repvgg_a0();
  const refold::ReparamReport report =
      refold::reparameterize(*fused_nchw, {.input_shape = refold::Shape{1, 3, kImage, kImage}});
  refold::reparameterize(*fused_nhwc);
  // The deploy form as it is meant to run: each block's ReLU fused into its conv's primitive
  // (bench/repvgg_a0.h; Conv2d::set_activation), so a block is one oneDNN call.
  for (const auto& fused : {fused_nchw, fused_nhwc})
    if (refold::bench::fuse_deployed_activations(*fused) != 22)
      die("expected 22 conv+ReLU pairs fused in the deploy form");
  if (report.converted.size() != 22 || !report.left_as_is.empty() || !report.flops_after)
    die("expected all 22 RepVGGBlocks converted with FLOPs counted, got:\n" + report.to_string());
  refold::nn::utils::convert_conv2d_weight_memory_format(*train_nhwc, MemoryFormat::ChannelsLast);
  refold::nn::utils::convert_conv2d_weight_memory_format(*fused_nhwc, MemoryFormat::ChannelsLast);

  // Deploy-form FLOPs of one image: the blocks' (the report: 2 per multiply-add, + bias adds)
  // plus the classifier's 2·1280·1000 (average pooling is not counted, as in the report).
  const double flops_per_image = static_cast<double>(*report.flops_after) + 2.0 * 1280 * 1000;
  benchmark::AddCustomContext("refold_threads", std::to_string(kThreads));
  benchmark::AddCustomContext("deploy_gflops_per_image", std::to_string(flops_per_image * 1e-9));
  benchmark::AddCustomContext("train_block_gflops_per_image",
                              std::to_string(static_cast<double>(*report.flops_before) * 1e-9));

  // The two forms must compute the same function, in each layout, before anything is timed.
  refold::Generator gen(42);
  for (auto [train, fused, format] :
       {std::tuple{train_nchw, fused_nchw, MemoryFormat::Contiguous},
        std::tuple{train_nhwc, fused_nhwc, MemoryFormat::ChannelsLast}}) {
    const refold::Tensor x = refold::randn({1, 3, kImage, kImage}, format, gen);
    const refold::VerifyResult r = refold::verify(*train, *fused, {x});
    std::fprintf(stderr, "verify %s: %s\n", format == MemoryFormat::Contiguous ? "nchw" : "nhwc",
                 r.to_string().c_str());
    if (!r.within())
      die("training and re-parameterized forms disagree beyond the tolerance of docs/testing.md");
  }

  const std::vector<Variant> variants{{"train/nchw", train_nchw, MemoryFormat::Contiguous},
                                      {"reparam/nchw", fused_nchw, MemoryFormat::Contiguous},
                                      {"train/nhwc", train_nhwc, MemoryFormat::ChannelsLast},
                                      {"reparam/nhwc", fused_nhwc, MemoryFormat::ChannelsLast}};
  for (std::int64_t batch : {1, 8}) {
    for (const Variant& v : variants) {
      const refold::Tensor input = refold::randn({batch, 3, kImage, kImage}, v.format, gen);
      // One untimed forward per model and shape (oneDNN creates its primitives on first use).
      (*v.model)(input);
      const double flops = flops_per_image * static_cast<double>(batch);
      benchmark::RegisterBenchmark(
          ("RepVGG_A0/" + v.name + "/batch:" + std::to_string(batch)).c_str(),
          [model = v.model, input, flops](benchmark::State& state) {
            for (auto _ : state) {
              refold::Tensor y = (*model)(input);
              benchmark::DoNotOptimize(y.data_ptr());
            }
            state.counters["GFLOP/s"] =
                benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
          })
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinWarmUpTime(0.5)
          ->ComputeStatistics("p90", p90);
    }
  }

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
