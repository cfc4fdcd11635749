// refold's linear (kernels/onednn/linear.h: oneDNN's matmul with its weight packed once in the
// primitive's own format) against what it replaced, oneDNN's inner product reading the plain
// [O, K] weight, on transformer and classifier shapes: alternating pairs (paired_timing.h;
// ratio refold / inner product, < 1: refold faster). Both run on oneDNN's threads; refold's call
// includes its primitive-cache and packed-weight lookups and the output allocation.
// Run (the exact command is in bench/RESULTS.md):
//   REFOLD_NUM_THREADS=2 OMP_NUM_THREADS=2 build/bench/linear_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/onednn/linear.h"
#include "paired_timing.h"
#include "refold/tensor.h"

namespace {

using namespace refold;

struct Problem {
  std::string name;
  std::int64_t rows, in, out;
};

const std::vector<Problem> kProblems = {
    {"xcit_qkv_196x128_to_384", 196, 128, 384}, {"xcit_fc2_196x512_to_128", 196, 512, 128},
    {"deit_qkv_197x192_to_576", 197, 192, 576}, {"deit_fc2_197x768_to_192", 197, 768, 192},
    {"levit_49x256_to_1024", 49, 256, 1024},    {"pvt_stage1_3136x64_to_256", 3136, 64, 256},
    {"convnext_3136x96_to_384", 3136, 96, 384}, {"classifier_1x1280_to_1000", 1, 1280, 1000},
};

// oneDNN's inner product on the plain weight, bias and row-major src/dst, as refold ran it.
class InnerProduct {
 public:
  InnerProduct(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const dnnl::memory::desc src({x.size(0), x.size(1)}, f32, tag::ab);
    const dnnl::memory::desc weights({w.size(0), w.size(1)}, f32, tag::ab);
    const dnnl::memory::desc bias({b.size(0)}, f32, tag::a);
    const dnnl::memory::desc dst({y.size(0), y.size(1)}, f32, tag::ab);
    primitive_ = dnnl::inner_product_forward(dnnl::inner_product_forward::primitive_desc(
        dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_inference, src, weights, bias,
                                          dst),
        engine_));
    args_ = {{DNNL_ARG_SRC, dnnl::memory(src, engine_, const_cast<void*>(x.data_ptr()))},
             {DNNL_ARG_WEIGHTS, dnnl::memory(weights, engine_, const_cast<void*>(w.data_ptr()))},
             {DNNL_ARG_BIAS, dnnl::memory(bias, engine_, const_cast<void*>(b.data_ptr()))},
             {DNNL_ARG_DST, dnnl::memory(dst, engine_, y.data_ptr())}};
  }
  void run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::inner_product_forward primitive_;
  std::unordered_map<int, dnnl::memory> args_;
};

void linear(benchmark::State& state, const Problem& p) {
  Generator gen(3);
  const Tensor x = randn({p.rows, p.in}, {}, gen);
  const Tensor w = randn({p.out, p.in}, {}, gen);
  const Tensor b = randn({p.out}, {}, gen);
  Tensor y = empty({p.rows, p.out});
  InnerProduct inner_product(x, w, b, y);
  for (int warm = 0; warm < 3; ++warm) onednn::linear(x, w, b, {});  // packs from the second
  bench::time_paired(
      state, "refold", [&] { benchmark::DoNotOptimize(onednn::linear(x, w, b, {}).data_ptr()); },
      "inner_product", [&] { inner_product.run(); });
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(p.rows * p.in * p.out) *
                                                 1e-3 / state.counters["refold_us"]);
}

}  // namespace

int main(int argc, char** argv) {
  for (const Problem& p : kProblems)
    benchmark::RegisterBenchmark(p.name.c_str(), linear, p)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
