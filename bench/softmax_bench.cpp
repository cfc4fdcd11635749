// refold's native Softmax (kernels/native/softmax.h) against oneDNN 2.6's softmax primitive on
// the same tensor, for the two shapes of axis refold's kernel has: a strided axis (YOLOv8's DFL
// head, softmax over 16 bins of [1, 16, 4, 8400]; an NCHW channel softmax) and a contiguous one
// (a classifier's 1000 logits, attention rows, an NHWC channel softmax).
//
// "paired" runs both alternately in one loop and reports their median times and the median
// per-pair ratio native / onednn (< 1: native faster). The native call allocates its output as
// the dispatch does; oneDNN's primitive and memories are made once, execute + wait per
// iteration. This file and conv_layers_bench.cpp are the only ones outside src/kernels/onednn/
// that include dnnl.hpp: the baseline has to.
// Run (the exact command is in bench/RESULTS.md):
//   REFOLD_NUM_THREADS=2 build/bench/softmax_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/native/softmax.h"
#include "paired_timing.h"
#include "refold/tensor.h"
#include "refold/threads.h"

namespace {

using refold::MemoryFormat;
using refold::Tensor;

struct Problem {
  std::string name;
  refold::Shape sizes;
  std::int64_t axis;
  MemoryFormat format;
};

const std::vector<Problem> kProblems = {
    {"dfl_1x16x4x8400_axis1", {1, 16, 4, 8400}, 1, MemoryFormat::Contiguous},
    {"nchw_1x64x56x56_axis1", {1, 64, 56, 56}, 1, MemoryFormat::Contiguous},
    {"rows_256x1000_axis1", {256, 1000}, 1, MemoryFormat::Contiguous},
    {"attention_4x256x256_axis2", {4, 256, 256}, 2, MemoryFormat::Contiguous},
    {"nhwc_1x64x56x56_axis1", {1, 64, 56, 56}, 1, MemoryFormat::ChannelsLast},
};

// oneDNN's softmax_forward over x's own memory layout.
class OnednnSoftmax {
 public:
  OnednnSoftmax(const Problem& p, const Tensor& x, Tensor& y)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    dnnl::memory::dims dims(p.sizes.begin(), p.sizes.end());
    dnnl::memory::dims strides(x.strides().begin(), x.strides().end());
    const dnnl::memory::desc md(dims, dnnl::memory::data_type::f32, strides);
    const dnnl::softmax_forward::desc d(dnnl::prop_kind::forward_inference, md,
                                        static_cast<int>(p.axis));
    const dnnl::softmax_forward::primitive_desc pd(d, engine_);
    primitive_ = dnnl::softmax_forward(pd);
    src_ = dnnl::memory(md, engine_, const_cast<void*>(x.data_ptr()));
    dst_ = dnnl::memory(md, engine_, y.data_ptr());
    impl_ = pd.impl_info_str();
  }
  void run() {
    primitive_.execute(stream_, {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}});
    stream_.wait();
  }
  const std::string& impl() const { return impl_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::softmax_forward primitive_;
  dnnl::memory src_, dst_;
  std::string impl_;
};

void BM_Paired(benchmark::State& state, const Problem& p) {
  refold::Generator gen(1);
  Tensor x = refold::empty(p.sizes, p.format);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>(8.0 * gen.uniform() - 4.0);
  Tensor y = refold::empty(p.sizes, p.format);
  OnednnSoftmax onednn(p, x, y);
  refold::bench::time_paired(
      state, "native",
      [&] {
        benchmark::DoNotOptimize(refold::native::softmax(
            x, {}, p.axis, refold::reference::SoftmaxKind::Softmax, false, nullptr));
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
