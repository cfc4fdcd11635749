// `refold bench`: the model as imported and optimized, each in NCHW and with the planned NHWC
// layout, timed interleaved (one run of each variant per round, so the machine's noise falls on
// all alike): median and p90 latency, GFLOP/s, speed-up over the imported NCHW model, peak
// activation memory. --variant times only some; one alone runs back to back, with its weights
// and activations left in the caches by its previous run, as a server runs a model (the
// interleaved runs evict each other's: MobileNetV2's optimized NHWC model took 9.2–9.9 ms there
// against 7.5–9.0 alone, bench/RESULTS.md).
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "commands.h"
#include "profile_output.h"
#include "refold/error.h"
#include "refold/graph/profile.h"
#include "refold/memory.h"
#include "refold/model_inputs.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/pipeline.h"
#include "refold/threads.h"

namespace refold::cli {

namespace {

struct Variant {
  std::string name;
  std::set<std::string> disabled;  // passes left out
  std::shared_ptr<graph::Graph> graph;
  std::vector<double> ms;
  std::int64_t flops = 0;
  std::uint64_t peak_bytes = 0;
  double median = 0, p90 = 0;
};

// The q-quantile of sorted samples (nearest rank).
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

void progress(int done, int total) {
  if (isatty(STDERR_FILENO) == 0) return;
  const int width = 30, filled = total == 0 ? width : done * width / total;
  std::fprintf(stderr, "\r[%s%s] %d/%d", std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(width - filled), ' ').c_str(), done, total);
  if (done == total) std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

// One bar of a chart: a label, its value and a whisker (p90; the value itself when none).
struct Bar {
  std::string label;
  double value, whisker;
};

// Horizontal bar charts, one per section (title, bars), in one SVG.
void write_plot(const std::string& file,
                const std::vector<std::pair<std::string, std::vector<Bar>>>& sections) {
  const int bar_h = 28, left = 190, width = 420, title_h = 40;
  int height = 20;
  for (const auto& [title, bars] : sections)
    height += title_h + bar_h * static_cast<int>(bars.size());
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" "
      "font-family=\"sans-serif\" font-size=\"13\">\n",
      left + width + 90, height);
  int y = 0;
  for (const auto& [title, bars] : sections) {
    double longest = 0;
    for (const Bar& b : bars) longest = std::max(longest, b.whisker);
    svg += fmt::format("<text x=\"10\" y=\"{}\">{}</text>\n", y + 22, title);
    y += title_h;
    for (const Bar& b : bars) {
      const double w = longest > 0 ? b.value / longest * width : 0;
      const double p = longest > 0 ? b.whisker / longest * width : 0;
      svg += fmt::format(
          "<text x=\"10\" y=\"{}\">{}</text><rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" "
          "height=\"{}\" fill=\"#4878a8\"/><line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" "
          "y2=\"{}\" stroke=\"black\"/><text x=\"{:.1f}\" y=\"{}\">{:.2f} ms</text>\n",
          y + 18, b.label, left, y + 4, w, bar_h - 8, left + p, left + p, y + 6, y + bar_h - 6,
          left + p + 6, y + 18, b.value);
      y += bar_h;
    }
  }
  svg += "</svg>\n";
  const std::string tmp = file + ".tmp";
  std::ofstream(tmp) << svg;
  std::filesystem::rename(tmp, file);
}

}  // namespace

int bench_command(const BenchArgs& args, std::FILE* out) {
  if (args.threads > 0) set_num_threads(args.threads);
  if (args.dtype != "f32" && args.dtype != "bf16") {
    throw Error(fmt::format("bench: --dtype must be f32 or bf16, got '{}'", args.dtype));
  }
  if (args.runs < 1) throw Error(fmt::format("bench: --runs must be ≥ 1, got {}", args.runs));
  const DType dtype = args.dtype == "bf16" ? DType::BFloat16 : DType::Float32;

  // Each variant is the pipeline with some passes left out.
  const std::set<std::string> everything(passes::pass_names().begin(), passes::pass_names().end());
  std::set<std::string> all_but_layout = everything;
  all_but_layout.erase("layout");
  struct Kind {
    const char* flag;  // --variant's name
    const char* name;
    std::set<std::string> disabled;
  };
  const std::vector<Kind> kinds = {{"imported-nchw", "imported NCHW", everything},
                                   {"imported-nhwc", "imported NHWC", all_but_layout},
                                   {"optimized-nchw", "optimized NCHW", {"layout"}},
                                   {"optimized-nhwc", "optimized NHWC", {}}};
  std::vector<Variant> variants;
  for (const Kind& k : kinds) {
    if (args.variants.empty() ||
        std::find(args.variants.begin(), args.variants.end(), k.flag) != args.variants.end()) {
      Variant v;
      v.name = k.name;
      v.disabled = k.disabled;
      v.disabled.insert(args.disable.begin(), args.disable.end());
      variants.push_back(std::move(v));
    }
  }
  for (const std::string& wanted : args.variants) {
    if (std::none_of(kinds.begin(), kinds.end(), [&](const Kind& k) { return wanted == k.flag; }))
      throw Error(
          fmt::format("bench: --variant must be imported-nchw, imported-nhwc, optimized-nchw or "
                      "optimized-nhwc, got '{}'",
                      wanted));
  }
  std::vector<Tensor> inputs;
  for (Variant& v : variants) {
    v.graph = onnx::load(args.model, args.load);
    passes::optimize(*v.graph, {v.disabled});
    if (inputs.empty())
      inputs = random_inputs(*v.graph, std::max<std::int64_t>(args.batch, 1), args.batch > 0,
                             parse_input_shapes(args.input_shapes, *v.graph));
    if (dtype != DType::Float32) v.graph->to(dtype);
  }
  for (Tensor& t : inputs) t = t.to(dtype);

  // Warm-up: primitives created, weights packed; FLOPs and peak memory from the last one.
  for (Variant& v : variants) {
    for (int i = 0; i < args.warmup; ++i) v.graph->run(inputs);
    // Peak activation memory: what the run allocates above what was live before it.
    const std::uint64_t before = memory_stats().current_bytes;
    reset_peak_memory();
    v.flops = graph::profile(*v.graph, inputs).flops;
    v.peak_bytes = memory_stats().peak_bytes - before;
  }
  const int total = args.runs * static_cast<int>(variants.size());
  int done = 0;
  for (int r = 0; r < args.runs; ++r) {
    for (Variant& v : variants) {
      const auto start = std::chrono::steady_clock::now();
      v.graph->run(inputs);
      v.ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
      progress(++done, total);
    }
  }
  for (Variant& v : variants) {
    v.median = quantile(v.ms, 0.5);
    v.p90 = quantile(v.ms, 0.9);
  }
  // Speed-ups are over the first variant timed (imported NCHW unless --variant leaves it out).
  const double baseline = variants[0].median;
  const auto optimized_nhwc = std::find_if(variants.begin(), variants.end(), [](const Variant& v) {
    return v.name == "optimized NHWC";
  });

  // --profile: the optimized NHWC model node by node, each node's median over the runs.
  std::optional<graph::RunProfile> profile;
  if (args.profile || !args.profile_json.empty()) {
    if (optimized_nhwc == variants.end())
      throw Error("bench: --profile profiles the optimized-nhwc variant; --variant leaves it out");
    std::vector<graph::RunProfile> runs;
    for (int r = 0; r < args.runs; ++r) {
      runs.push_back(graph::profile(*optimized_nhwc->graph, inputs));
      // Kept, each run's outputs would make the next run's output nodes allocate fresh memory
      // (page faults the timed runs never pay: DeepLabV3's final Resize showed 1.9 ms, not 0.5).
      runs.back().outputs.clear();
    }
    profile = graph::median_profile(runs);
    if (!args.profile_json.empty()) {
      const std::string tmp = args.profile_json + ".tmp";
      std::ofstream(tmp) << profile_json(*profile).dump(2) << "\n";
      std::filesystem::rename(tmp, args.profile_json);
    }
  }

  if (!args.plot.empty()) {
    std::vector<Bar> bars;
    for (const Variant& v : variants) bars.push_back({v.name, v.median, v.p90});
    std::vector<std::pair<std::string, std::vector<Bar>>> sections{
        {fmt::format("refold bench {} (median ms, p90 whisker)", args.model), bars}};
    if (profile) {
      std::vector<Bar> types;
      for (const graph::OpTypeProfile& t : graph::by_op_type(*profile))
        types.push_back({t.op_type, t.milliseconds, t.milliseconds});
      sections.emplace_back("optimized NHWC, time per op type (ms, median per node)", types);
    }
    write_plot(args.plot, sections);
  }
  if (args.json) {
    nlohmann::json j = {{"model", args.model},
                        {"batch", inputs.empty() ? 0 : inputs[0].sizes()[0]},
                        {"threads", get_num_threads()},
                        {"dtype", args.dtype},
                        {"runs", args.runs}};
    for (const Variant& v : variants) {
      j["variants"].push_back({{"name", v.name},
                               {"median_ms", v.median},
                               {"p90_ms", v.p90},
                               {"samples_ms", v.ms},
                               {"gflops", v.flops / (v.median * 1e6)},
                               {"flops", v.flops},
                               {"speedup", baseline / v.median},
                               {"peak_activation_bytes", v.peak_bytes}});
    }
    if (optimized_nhwc != variants.end()) j["optimized_nhwc_ms_median"] = optimized_nhwc->median;
    if (profile) j["profile"] = profile_json(*profile);
    fmt::print(out, "{}\n", j.dump(2));
    return 0;
  }
  fmt::print(out, "{}: batch {}, {} threads, {}, {} runs {}\n", args.model,
             inputs.empty() ? 0 : inputs[0].sizes()[0], get_num_threads(), args.dtype, args.runs,
             variants.size() > 1 ? "interleaved" : "back to back");
  fmt::print(out, "{:<16} {:>10} {:>10} {:>9} {:>9} {:>12}\n", "variant", "median ms", "p90 ms",
             "GFLOP/s", "speed-up", "peak act MB");
  for (const Variant& v : variants) {
    fmt::print(out, "{:<16} {:>10.3f} {:>10.3f} {:>9.1f} {:>8.2f}x {:>12.2f}\n", v.name, v.median,
               v.p90, v.flops / (v.median * 1e6), baseline / v.median, v.peak_bytes / 1048576.0);
  }
  if (profile) {
    print_profile(out,
                  fmt::format("profile of optimized NHWC (median per node of {} runs)", args.runs),
                  *profile);
  }
  return 0;
}

}  // namespace refold::cli
