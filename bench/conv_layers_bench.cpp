// Per-layer cost of refold's oneDNN conv2d against a direct oneDNN call of the same conv, for
// the distinct conv shapes of RepVGG-A0 (deploy form) at 224×224, batch 1, both layouts.
//
// RepVGG-A0: stage depths [1, 2, 4, 14, 1], widths [48, 48, 96, 192, 1280] (a = 0.75,
// b = 2.5: min(64, 64a), 64a, 128a, 256a, 512b); the first conv of each stage has stride 2;
// every conv is 3×3, padding 1, with bias and ReLU (fused in both columns).
//
// "refold" is onednn::conv2d as the dispatch calls it: output allocated per call, primitive and
// packed weight looked up in refold's caches. "winograd2x2" and "winograd4x4" (NHWC stride-1
// layers) are refold's own Winograd kernel (kernels/native) with each of its tiles, F(2×2, 3×3)
// and F(4×4, 3×3); the dispatch runs it for those layers by default, with the tile of
// native::winograd_tile(). Their FLOPS counter is the direct conv's count, an effective rate.
// "native_direct" (NHWC stride-2 layers past the stem, and the dilated layers) is refold's own
// direct conv (kernels/native/direct_conv2d.h). "direct" is the baseline: one oneDNN primitive
// created once (plain nchw/nhwc src and dst, format_tag::any weights reordered once), memories
// created once, execute + wait per iteration. This file is the only one outside src/kernels/onednn/
// that includes dnnl.hpp: the baseline has to.
//
// FLOPS counter: 2·N·OH·OW·OC·(IC/groups)·kh·kw per iteration. "paired" rows run refold's
// kernel and the direct call alternately in one loop and report the median per-pair time ratio.
// Run (the exact command is in bench/RESULTS.md):
//   REFOLD_NUM_THREADS=2 build/bench/conv_layers_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only
#include <benchmark/benchmark.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/native/direct_conv2d.h"
#include "kernels/native/winograd_conv2d.h"
#include "kernels/onednn/conv2d.h"
#include "kernels/post_ops.h"
#include "paired_timing.h"
#include "refold/conv_algorithm.h"
#include "refold/op_options.h"
#include "refold/tensor.h"
#include "refold/threads.h"

namespace {

using refold::MemoryFormat;

struct Layer {
  std::int64_t in_channels, out_channels, size, stride;  // size: input height = width
  int count;                                             // how many convs of RepVGG-A0 have it
  std::int64_t dilation = 1;  // padding = dilation: the output keeps the size at stride 1
  std::int64_t groups = 1;
};

// The distinct conv shapes of RepVGG-A0 at 224², in network order.
const std::vector<Layer> kLayers = {
    {3, 48, 224, 2, 1},     // stage 0
    {48, 48, 112, 2, 1},    // stage 1, first
    {48, 48, 56, 1, 1},     // stage 1
    {48, 96, 56, 2, 1},     // stage 2, first
    {96, 96, 28, 1, 3},     // stage 2
    {96, 192, 28, 2, 1},    // stage 3, first
    {192, 192, 14, 1, 13},  // stage 3
    {192, 1280, 14, 2, 1},  // stage 4
};

// Not RepVGG-A0's: stride-1 shapes of other nets (YOLOv8n, ResNet, DenseNet) with few channels,
// where native::winograd_conv2d's channel rule (C_in·C_out / (C_in + C_out) ≥ 12 for 4×4 tiles,
// 20 for 2×2) was measured against oneDNN.
const std::vector<Layer> kChannelRuleLayers = {
    {16, 16, 160, 1, 0}, {16, 16, 56, 1, 0}, {24, 24, 56, 1, 0},
    {32, 32, 80, 1, 0},  {32, 64, 56, 1, 0}, {40, 40, 28, 1, 0},
    {48, 48, 28, 1, 0},  {64, 64, 40, 1, 0}, {64, 64, 14, 1, 0},
};

// Dilated 3×3 stride-1 convs of segmentation heads and dilated backbones (DeepLabV3's ASPP at
// rates 12 over a 16² map and 6 over 32², dilated ResNet stages), where oneDNN 2.6's NHWC path
// falls back to im2col + GEMM and the native direct conv leaves out the taps that read padding.
const std::vector<Layer> kDilatedLayers = {
    {960, 256, 16, 1, 0, 12}, {256, 256, 32, 1, 0, 6}, {256, 256, 28, 1, 0, 4},
    {256, 256, 28, 1, 0, 2},  {128, 128, 56, 1, 0, 2}, {64, 64, 56, 1, 0, 2},
};

// 3×3 with padding = dilation: (size + 2·d − 2·d − 1) / stride + 1.
// Grouped 3×3 convs: RegNetX-200MF's (8 channels per group, stride 2 opening each stage, then
// stride 1), ResNeXt-50 32×4d's (8, 16, 32 per group) and 24 per group (blocks of 8).
const std::vector<Layer> kGroupedLayers = {
    {24, 24, 112, 2, 0, 1, 3},   {56, 56, 56, 2, 0, 1, 7},    {152, 152, 28, 2, 0, 1, 19},
    {152, 152, 14, 1, 0, 1, 19}, {368, 368, 14, 2, 0, 1, 46}, {368, 368, 7, 1, 0, 1, 46},
    {256, 256, 28, 1, 0, 1, 32}, {512, 512, 14, 1, 0, 1, 32}, {1024, 1024, 7, 1, 0, 1, 32},
    {240, 240, 14, 1, 0, 1, 10},
};

std::int64_t out_size(const Layer& l) { return (l.size - 1) / l.stride + 1; }

double flops(const Layer& l) {
  const double o = static_cast<double>(out_size(l));
  return 2.0 * o * o *
         static_cast<double>(l.out_channels * l.in_channels / l.groups * 9);  // padding too
}

void set_counters(benchmark::State& state, const Layer& l) {
  state.counters["FLOPS"] =
      benchmark::Counter(flops(l), benchmark::Counter::kIsIterationInvariantRate);
}

struct Operands {
  refold::Tensor input, weight, bias;
};

Operands make_operands(const Layer& l, MemoryFormat format) {
  refold::Generator gen(42);
  Operands o;
  o.input = refold::randn({1, l.in_channels, l.size, l.size}, format, gen);
  // convert_conv2d_weight_memory_format: the weights carry the layout the conv runs in.
  o.weight = refold::randn({l.out_channels, l.in_channels / l.groups, 3, 3}, format, gen);
  o.bias = refold::randn({l.out_channels}, {}, gen);
  return o;
}

enum class Kernel { OneDnn, Winograd2x2, Winograd4x4, NativeDirect };

// refold's path, as the dispatch calls it: oneDNN, or the Winograd kernel.
class RefoldConv {
 public:
  RefoldConv(const Layer& l, MemoryFormat format, Kernel kernel)
      : o_(make_operands(l, format)), kernel_(kernel) {
    options_.stride = l.stride;
    options_.padding = l.dilation;
    options_.dilation = l.dilation;
    options_.groups = l.groups;
    post_.activation = refold::Activation::ReLU;
    run();  // creates the primitive and packs the weight, outside any timing
  }
  void run() const {
    using refold::native::WinogradTile;
    const auto call = [&] {
      return refold::validate_conv2d(o_.input, o_.weight, o_.bias, options_, post_);
    };
    refold::Tensor y =
        kernel_ == Kernel::Winograd2x2
            ? refold::native::winograd_conv2d(call(), WinogradTile::F2x2, nullptr)
        : kernel_ == Kernel::Winograd4x4
            ? refold::native::winograd_conv2d(call(), WinogradTile::F4x4, nullptr)
        : kernel_ == Kernel::NativeDirect
            ? refold::native::direct_conv2d(o_.input, o_.weight, o_.bias, options_, post_, nullptr)
            : refold::onednn::conv2d(o_.input, o_.weight, o_.bias, options_, post_);
    benchmark::DoNotOptimize(y.data_ptr());
  }

 private:
  Operands o_;
  Kernel kernel_;
  refold::Conv2dOptions options_;
  refold::PostOps post_;
};

// The baseline: a plain oneDNN primitive and its memories, all created once.
class DirectConv {
 public:
  DirectConv(const Layer& l, MemoryFormat format)
      : o_(make_operands(l, format)), engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using md = dnnl::memory::desc;
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const tag t = format == MemoryFormat::ChannelsLast ? tag::nhwc : tag::nchw;
    const std::int64_t out = out_size(l);
    const md src_md({1, l.in_channels, l.size, l.size}, dt::f32, t);
    const md dst_md({1, l.out_channels, out, out}, dt::f32, t);
    const std::int64_t g = l.groups, og = l.out_channels / g, ig = l.in_channels / g;
    const md weights_any = g == 1 ? md({l.out_channels, l.in_channels, 3, 3}, dt::f32, tag::any)
                                  : md({g, og, ig, 3, 3}, dt::f32, tag::any);
    const md bias_md({l.out_channels}, dt::f32, tag::a);
    dnnl::post_ops ops;
    ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
        weights_any, bias_md, dst_md, {l.stride, l.stride}, {l.dilation - 1, l.dilation - 1},
        {l.dilation, l.dilation}, {l.dilation, l.dilation});
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, engine_);
    conv_ = dnnl::convolution_forward(pd);
    impl_ = pd.impl_info_str();

    // Weights: the user's (oihw, or ohwi for channels_last) reordered once into pd's format.
    const bool nhwc = format == MemoryFormat::ChannelsLast;
    const md user_weights_md =
        g == 1 ? md({l.out_channels, l.in_channels, 3, 3}, dt::f32, nhwc ? tag::ohwi : tag::oihw)
               : md({g, og, ig, 3, 3}, dt::f32, nhwc ? tag::gohwi : tag::goihw);
    dnnl::memory user_weights(user_weights_md, engine_, const_cast<void*>(o_.weight.data_ptr()));
    dnnl::memory weights(pd.weights_desc(), engine_);
    dnnl::reorder(user_weights, weights).execute(stream_, user_weights, weights);
    stream_.wait();

    dst_ = refold::empty({1, l.out_channels, out, out}, format);
    args_ = {{DNNL_ARG_SRC, dnnl::memory(src_md, engine_, const_cast<void*>(o_.input.data_ptr()))},
             {DNNL_ARG_WEIGHTS, weights},
             {DNNL_ARG_BIAS, dnnl::memory(bias_md, engine_, const_cast<void*>(o_.bias.data_ptr()))},
             {DNNL_ARG_DST, dnnl::memory(dst_md, engine_, dst_.data_ptr())}};
    run();  // warm-up, as for refold
  }
  void run() {
    conv_.execute(stream_, args_);
    stream_.wait();
  }
  const std::string& impl() const { return impl_; }

 private:
  Operands o_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::convolution_forward conv_;
  std::string impl_;
  refold::Tensor dst_;
  std::unordered_map<int, dnnl::memory> args_;
};

void BM_Refold(benchmark::State& state, Layer l, MemoryFormat format, Kernel kernel) {
  const RefoldConv conv(l, format, kernel);
  for (auto _ : state) conv.run();
  set_counters(state, l);
}

void BM_Direct(benchmark::State& state, Layer l, MemoryFormat format) {
  DirectConv conv(l, format);
  for (auto _ : state) conv.run();
  state.SetLabel(conv.impl());
  set_counters(state, l);
}

// Both, call after call, in alternating order: on a shared machine whose load changes by the
// second the two see the same conditions, so the per-pair ratio is much steadier than the ratio
// of two separately measured medians. Counters: refold_us and direct_us (medians over the
// iterations) and ratio = median of refold/direct per pair. The benchmark's own time is the
// pair's.
void BM_Paired(benchmark::State& state, Layer l, MemoryFormat format, Kernel kernel) {
  RefoldConv refold_conv(l, format, kernel);
  DirectConv direct_conv(l, format);
  refold::bench::time_paired(
      state, "refold", [&] { refold_conv.run(); }, "direct", [&] { direct_conv.run(); });
  state.SetLabel(direct_conv.impl());
}

}  // namespace

int main(int argc, char** argv) {
  // Both columns run on the same OpenMP team size: refold's setting (REFOLD_NUM_THREADS, else
  // the physical cores); the direct call runs on this thread's OpenMP setting.
  omp_set_num_threads(refold::get_num_threads());
  // refold's own kernels wherever they can compute the layer, whatever their rules say: the
  // rules are what these rows measure.
  refold::set_conv_algorithm(refold::ConvAlgorithm::Native);
  for (MemoryFormat format : {MemoryFormat::ChannelsLast, MemoryFormat::Contiguous}) {
    const std::string layout = format == MemoryFormat::ChannelsLast ? "nhwc" : "nchw";
    std::vector<Layer> layers = kLayers;
    if (format == MemoryFormat::ChannelsLast) {
      layers.insert(layers.end(), kChannelRuleLayers.begin(), kChannelRuleLayers.end());
      layers.insert(layers.end(), kDilatedLayers.begin(), kDilatedLayers.end());
      layers.insert(layers.end(), kGroupedLayers.begin(), kGroupedLayers.end());
    }
    for (const Layer& l : layers) {
      const std::string name = layout + "/" + std::to_string(l.in_channels) + "x" +
                               std::to_string(l.size) + "->" + std::to_string(l.out_channels) +
                               "_s" + std::to_string(l.stride) +
                               (l.dilation > 1 ? "_d" + std::to_string(l.dilation) : "") +
                               (l.groups > 1 ? "_g" + std::to_string(l.groups) : "");
      // Each refold kernel alone ("<kernel>") and paired with the direct call
      // ("<kernel>_paired", "paired" for oneDNN through refold): oneDNN through refold on every
      // layer, Winograd on the NHWC stride-1 layers, the native direct conv on the NHWC stride-2
      // layers past the stem.
      const auto add = [&](const std::string& kernel_name, Kernel kernel) {
        // "paired" alone for oneDNN: the name bench/RESULTS.md's earlier runs used.
        const std::string paired = kernel == Kernel::OneDnn ? "paired" : kernel_name + "_paired";
        benchmark::RegisterBenchmark((name + "/" + kernel_name).c_str(), BM_Refold, l, format,
                                     kernel)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark((name + "/" + paired).c_str(), BM_Paired, l, format, kernel)
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      };
      benchmark::RegisterBenchmark((name + "/direct").c_str(), BM_Direct, l, format)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      add("refold", Kernel::OneDnn);
      if (format == MemoryFormat::ChannelsLast && l.stride == 1 && l.dilation == 1 &&
          l.groups == 1) {
        // Each tile where its channel rule takes the layer.
        const auto takes = [&](refold::native::WinogradTile tile) {
          const Operands o = make_operands(l, format);
          refold::Conv2dOptions options;
          options.padding = 1;
          std::string declined;
          return refold::native::winograd_conv2d(
                     refold::validate_conv2d(o.input, o.weight, o.bias, options, {}), tile,
                     &declined)
              .defined();
        };
        if (takes(refold::native::WinogradTile::F2x2)) add("winograd2x2", Kernel::Winograd2x2);
        if (takes(refold::native::WinogradTile::F4x4)) add("winograd4x4", Kernel::Winograd4x4);
      }
      if (format == MemoryFormat::ChannelsLast &&
          (l.stride == 2 || l.dilation > 1 || l.groups > 1) && l.in_channels >= 16)
        add("native_direct", Kernel::NativeDirect);
    }
  }
  // Not a RepVGG layer: a conv so small that the difference is refold's fixed cost per call
  // (cache lookups, output allocation, oneDNN memory objects).
  const Layer tiny{8, 8, 4, 1, 0};
  benchmark::RegisterBenchmark("nhwc/probe_8x4->8_s1/refold", BM_Refold, tiny,
                               MemoryFormat::ChannelsLast, Kernel::OneDnn)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("nhwc/probe_8x4->8_s1/direct", BM_Direct, tiny,
                               MemoryFormat::ChannelsLast)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
