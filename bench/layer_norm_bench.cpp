// refold's native LayerNormalization over contiguous rows (kernels/native/layer_norm.h) against
// oneDNN 2.6's layer_normalization primitive on the same tensor: transformer tokens (XCiT-Nano's
// 197 × 128, DeiT-Tiny's 197 × 192, Swin-T's first stage 3136 × 96, a last stage 49 × 768) and
// ConvNeXt's channels of a channels_last map (3136 rows of 96).
//
// "paired" runs both alternately in one loop and reports their median times and the median
// per-pair ratio native / onednn (< 1: native faster). The native call allocates its output as
// the dispatch does; oneDNN's primitive and memories are made once, execute + wait per
// iteration.
// Run (the exact command is in bench/RESULTS.md):
//   REFOLD_NUM_THREADS=2 build/bench/layer_norm_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "kernels/native/layer_norm.h"
#include "paired_timing.h"
#include "refold/tensor.h"
#include "refold/threads.h"

namespace {

using refold::Tensor;

struct Problem {
  std::string name;
  refold::Shape sizes;  // normalized over the last dim
};

const std::vector<Problem> kProblems = {
    {"xcit_197x128", {1, 197, 128}},        {"deit_197x192", {1, 197, 192}},
    {"swin1_3136x96", {1, 3136, 96}},       {"swin4_49x768", {1, 49, 768}},
    {"convnext_56x56x96", {1, 56, 56, 96}},
};

constexpr double kEpsilon = 1e-6;

Tensor random(const refold::Shape& sizes, refold::Generator& gen) {
  Tensor t = refold::empty(sizes);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = static_cast<float>(4.0 * gen.uniform() - 2.0);
  return t;
}

// oneDNN's layer_normalization_forward with a scale and a shift over the last dim.
class OnednnLayerNorm {
 public:
  OnednnLayerNorm(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    dnnl::memory::dims dims(x.sizes().begin(), x.sizes().end());
    const dnnl::memory::desc md(dims, dnnl::memory::data_type::f32,
                                dnnl::memory::dims(x.strides().begin(), x.strides().end()));
    const dnnl::memory::desc cd({x.size(-1)}, dnnl::memory::data_type::f32,
                                dnnl::memory::format_tag::a);
    const dnnl::layer_normalization_forward::desc d(
        dnnl::prop_kind::forward_inference, md, static_cast<float>(kEpsilon),
        dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
    const dnnl::layer_normalization_forward::primitive_desc pd(d, engine_);
    primitive_ = dnnl::layer_normalization_forward(pd);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(md, engine_, const_cast<void*>(x.data_ptr()))},
             {DNNL_ARG_DST, dnnl::memory(md, engine_, y.data_ptr())},
             {DNNL_ARG_SCALE, dnnl::memory(cd, engine_, const_cast<void*>(gamma.data_ptr()))},
             {DNNL_ARG_SHIFT, dnnl::memory(cd, engine_, const_cast<void*>(beta.data_ptr()))},
             {DNNL_ARG_MEAN, dnnl::memory(pd.mean_desc(), engine_)},
             {DNNL_ARG_VARIANCE, dnnl::memory(pd.variance_desc(), engine_)}};
    impl_ = pd.impl_info_str();
  }
  void run() {
    primitive_.execute(stream_, args_);
    stream_.wait();
  }
  const std::string& impl() const { return impl_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::layer_normalization_forward primitive_;
  std::unordered_map<int, dnnl::memory> args_;
  std::string impl_;
};

void BM_Paired(benchmark::State& state, const Problem& p) {
  refold::Generator gen(1);
  const Tensor x = random(p.sizes, gen);
  const Tensor gamma = random({p.sizes.back()}, gen), beta = random({p.sizes.back()}, gen);
  Tensor y = refold::empty(p.sizes);
  OnednnLayerNorm onednn(x, gamma, beta, y);
  refold::bench::time_paired(
      state, "native",
      [&] {
        benchmark::DoNotOptimize(
            refold::native::layer_norm_rows(x, gamma, beta, -1, kEpsilon, nullptr));
      },
      "onednn", [&] { onednn.run(); });
  state.SetLabel(onednn.impl());
}

}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(refold::get_num_threads());  // oneDNN's team = refold's setting
  for (const Problem& p : kProblems)
    benchmark::RegisterBenchmark((p.name + "/paired").c_str(), BM_Paired, p)
        ->UseManualTime()
        ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
