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
  // Within the tolerance, or (measured only when past it) within the rounding margin of the
  // model's own sensitivity to float32 rounding (OutputDiff::within_rounding).
  auto accepted = [&](const OutputDiff& diff) {
    if (diff.within_model_tolerance()) return true;
    Verification& v = *report.verification;
    if (!v.rounding_sensitivity)
      v.rounding_sensitivity = rounding_sensitivity(*original, inputs, expected);
    return diff.within_rounding(*v.rounding_sensitivity);
  };
  auto refusal = [&](const std::string& what, const OutputDiff& diff) {
    return Error(fmt::format(
        "optimize: {} differs from '{}' by {:.3g} (max |ref| {:.3g}; tolerance {:.3g}, and {} "
        "times the model's own rounding sensitivity {:.3g})",
        what, input, diff.max_abs, diff.reference_max_abs,
        OutputDiff::kModelTolerance * std::max(1.0, diff.reference_max_abs),
        OutputDiff::kRoundingMargin, report.verification->rounding_sensitivity.value_or(0)));
  };
  double in_memory_error = 0;
  if (options.verify) {
    Verification& v = report.verification.emplace();
    inputs = random_inputs(*original, 1, false, options.input_shapes);
    expected = original->run(inputs);
    const OutputDiff in_memory = compare_outputs(result.graph->run(inputs), expected);
    in_memory_error = v.in_memory_max_abs_error = v.max_abs_error = in_memory.max_abs;
    v.reference_max_abs = in_memory.reference_max_abs;
    if (!accepted(in_memory)) {
      const Error e = refusal("the optimized graph", in_memory);
      throw Error(std::string(e.what()) + "; nothing written");
    }
  }
  if (output.empty()) return result;
  onnx::save(*result.graph, output);
  if (options.verify) {
    // The file as any runtime would read it: reload OUT and compare it to IN.
    try {
      const OutputDiff written =
          compare_outputs(onnx::load(output, options.load)->run(inputs), expected);
      if (!accepted(written)) throw refusal(fmt::format("'{}'", output.string()), written);
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
    out += fmt::format("verify: max |OUT - IN| = {:.3g} (in memory {:.3g}), max |IN| = {:.3g}, ",
                       verification->max_abs_error, verification->in_memory_max_abs_error,
                       verification->reference_max_abs);
    if (const std::optional<double>& delta = verification->rounding_sensitivity) {
      out += fmt::format(
          "past the tolerance 1e-4 * max(1, max|IN|) but within {} times the model's own "
          "rounding sensitivity {:.3g} (how far IN moves for inputs one float32 ulp away): ok\n",
          OutputDiff::kRoundingMargin, *delta);
    } else {
      out += "tolerance 1e-4 * max(1, max|IN|): ok\n";
    }
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
    j["verify"] = {
        {"max_abs_error", verification->max_abs_error},
        {"in_memory_max_abs_error", verification->in_memory_max_abs_error},
        {"reference_max_abs", verification->reference_max_abs},
        {"tolerance", OutputDiff::kModelToleranceText},
        {"rounding_margin", OutputDiff::kRoundingMargin},
        {"rounding_sensitivity", verification->rounding_sensitivity
                                     ? nlohmann::json(*verification->rounding_sensitivity)
                                     : nlohmann::json(nullptr)},
        {"file_checked", verification->file_checked}};
  }
  return j.dump(2);
}

}  // namespace refold
