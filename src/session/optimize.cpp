#include "refold/optimize.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "passes/known_values.h"
#include "refold/error.h"

namespace refold {

namespace {

using Loader = std::function<std::shared_ptr<graph::Graph>()>;

OptimizedModel optimize_loaded(const Loader& load, const std::string& input,
                               const std::filesystem::path& output,
                               const OptimizeOptions& options) {
  passes::PipelineOptions pipeline;
  pipeline.disabled = options.disabled;
  OptimizedModel result{load(), {}};
  OptimizeReport& report = result.report;
  report.input = input;
  report.output = output.string();
  // The reference for verification: the model exactly as imported, no pass applied.
  std::shared_ptr<graph::Graph> original = options.verify ? load() : nullptr;
  check_input_shapes(options.input_shapes, *result.graph);
  // A model whose declarations contradict themselves is refused here, before anything is
  // written, as ONNX Runtime refuses it at load (docs/reliability.md).
  passes::detail::check_static_graph(*result.graph, options.input_shapes);
  report.pipeline = passes::optimize(*result.graph, pipeline);
  report.layout = passes::current_layout(*result.graph);

  std::vector<Tensor> inputs, expected;
  double in_memory_error = 0;
  if (options.verify) {
    Verification& v = report.verification.emplace();
    inputs = random_inputs(*original, 1, false, options.input_shapes);
    expected = original->run(inputs);
    const OutputDiff in_memory = compare_outputs(result.graph->run(inputs), expected);
    in_memory_error = v.in_memory_max_abs_error = v.max_abs_error = in_memory.max_abs;
    v.reference_max_abs = in_memory.reference_max_abs;
    if (!in_memory.within_model_tolerance()) {
      throw Error(
          fmt::format("optimize: the optimized graph differs from '{}' by {:.3g} (max "
                      "|ref| {:.3g}); nothing written",
                      input, in_memory.max_abs, in_memory.reference_max_abs));
    }
  }
  if (output.empty()) return result;
  onnx::save(*result.graph, output);
  if (options.verify) {
    // The file as any runtime would read it: reload OUT and compare it to IN.
    try {
      const OutputDiff written =
          compare_outputs(onnx::load(output, options.load)->run(inputs), expected);
      if (!written.within_model_tolerance()) {
        throw Error(fmt::format("optimize: '{}' differs from '{}' by {:.3g} (max |ref| {:.3g})",
                                output.string(), input, written.max_abs,
                                written.reference_max_abs));
      }
      report.verification->max_abs_error = std::max(written.max_abs, in_memory_error);
      report.verification->file_checked = true;
    } catch (...) {
      std::filesystem::remove(output);  // never leave a wrong file behind
      throw;
    }
  }
  return result;
}

std::string format_name(MemoryFormat f) {
  return f == MemoryFormat::ChannelsLast ? "NHWC" : "NCHW";
}

}  // namespace

OptimizedModel optimize_model(const std::filesystem::path& input,
                              const std::filesystem::path& output, const OptimizeOptions& options) {
  return optimize_loaded([&] { return onnx::load(input, options.load); }, input.string(), output,
                         options);
}

OptimizedModel optimize_model(std::span<const std::byte> model, const std::string& name,
                              const std::filesystem::path& output, const OptimizeOptions& options) {
  return optimize_loaded([&] { return onnx::load_from_memory(model, name, {}, options.load); },
                         name, output, options);
}

std::string OptimizeReport::to_string(bool verbose) const {
  std::string text = pipeline.to_string(verbose);
  if (!text.empty() && text.back() != '\n') text += '\n';
  std::string out =
      fmt::format("{} -> {}\n{}", input, output.empty() ? "(not written)" : output, text);
  if (!verbose) {
    out += fmt::format("layout: {} of {} convs with channels_last weights, {} permute{}",
                       layout.channels_last_weights, layout.convs, layout.permutes.size(),
                       layout.permutes.size() == 1 ? "" : "s");
    for (const passes::LayoutPermute& p : layout.permutes) {
      out +=
          fmt::format("; {} {}→{} at {}", p.value, format_name(p.from), format_name(p.to), p.node);
    }
    out += " (--verbose: the plan per node)\n";
  }
  if (verification) {
    out += fmt::format(
        "verify: max |OUT - IN| = {:.3g} (in memory {:.3g}), max |IN| = {:.3g}, "
        "tolerance 1e-4 * max(1, max|IN|): ok\n",
        verification->max_abs_error, verification->in_memory_max_abs_error,
        verification->reference_max_abs);
  }
  return out;
}

std::string OptimizeReport::to_json() const {
  nlohmann::json passes = nlohmann::json::array();
  for (const passes::PassReport& p : pipeline.passes) {
    passes.push_back({{"pass", p.pass}, {"changed", p.changed}, {"notes", p.notes}});
  }
  nlohmann::json permutes = nlohmann::json::array();
  for (const passes::LayoutPermute& p : layout.permutes) {
    permutes.push_back({{"value", p.value},
                        {"node", p.node},
                        {"from", format_name(p.from)},
                        {"to", format_name(p.to)}});
  }
  nlohmann::json j = {{"input", input},
                      {"output", output},
                      {"op_counts_before", pipeline.op_counts_before},
                      {"op_counts_after", pipeline.op_counts_after},
                      {"passes", passes},
                      {"layout",
                       {{"permutes", layout.permutes.size()},
                        {"permute_list", permutes},
                        {"convs", layout.convs},
                        {"channels_last_weights", layout.channels_last_weights},
                        {"nchw_convs", layout.nchw_convs}}}};
  if (verification) {
    j["verify"] = {{"max_abs_error", verification->max_abs_error},
                   {"in_memory_max_abs_error", verification->in_memory_max_abs_error},
                   {"reference_max_abs", verification->reference_max_abs},
                   {"tolerance", OutputDiff::kModelToleranceText},
                   {"file_checked", verification->file_checked}};
  }
  return j.dump(2);
}

}  // namespace refold
