// `refold optimize`: load, run the pass pipeline, save, and optionally prove OUT equals IN.
#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "commands.h"
#include "model_inputs.h"
#include "refold/error.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/layout.h"
#include "refold/passes/pipeline.h"

namespace refold::cli {

namespace {

nlohmann::json report_json(const passes::PipelineReport& report) {
  nlohmann::json passes = nlohmann::json::array();
  for (const passes::PassReport& p : report.passes) {
    passes.push_back({{"pass", p.pass}, {"changed", p.changed}, {"notes", p.notes}});
  }
  return {{"op_counts_before", report.op_counts_before},
          {"op_counts_after", report.op_counts_after},
          {"passes", passes}};
}

}  // namespace

int optimize_command(const OptimizeArgs& args, std::FILE* out) {
  passes::PipelineOptions options;
  options.disabled.insert(args.disable.begin(), args.disable.end());
  auto graph = onnx::load(args.input, args.load);
  // The reference for --verify: the model exactly as imported, no pass applied.
  std::shared_ptr<graph::Graph> original =
      args.verify ? onnx::load(args.input, args.load) : nullptr;
  const passes::PipelineReport report = passes::optimize(*graph, options);

  OutputDiff in_memory, written;
  std::vector<Tensor> inputs, expected;
  if (args.verify) {
    inputs = random_inputs(*original, 1, false, parse_input_shapes(args.input_shapes, *original));
    expected = original->run(inputs);
    in_memory = compare_outputs(graph->run(inputs), expected);
    if (!in_memory.within_model_tolerance()) {
      throw Error(
          fmt::format("optimize: the optimized graph differs from '{}' by {:.3g} (max "
                      "|ref| {:.3g}); nothing written",
                      args.input, in_memory.max_abs, in_memory.reference_max_abs));
    }
  }
  onnx::save(*graph, args.output);
  if (args.verify) {
    // The file as any runtime would read it: reload OUT and compare it to IN.
    try {
      written = compare_outputs(onnx::load(args.output, args.load)->run(inputs), expected);
      if (!written.within_model_tolerance()) {
        throw Error(fmt::format("optimize: '{}' differs from '{}' by {:.3g} (max |ref| {:.3g})",
                                args.output, args.input, written.max_abs,
                                written.reference_max_abs));
      }
    } catch (...) {
      std::filesystem::remove(args.output);  // never leave a wrong file behind
      throw;
    }
  }

  if (args.json) {
    nlohmann::json j = report_json(report);
    const passes::LayoutPlan layout = passes::current_layout(*graph);
    j["layout"] = {{"permutes", layout.permutes.size()},
                   {"convs", layout.convs},
                   {"channels_last_weights", layout.channels_last_weights},
                   {"nchw_convs", layout.nchw_convs}};
    j["input"] = args.input;
    j["output"] = args.output;
    if (args.verify) {
      j["verify"] = {{"max_abs_error", std::max(in_memory.max_abs, written.max_abs)},
                     {"reference_max_abs", expected.empty() ? 0.0 : written.reference_max_abs},
                     {"tolerance", "1e-4 * max(1, max|ref|)"}};
    }
    fmt::print(out, "{}\n", j.dump(2));
    return 0;
  }
  std::string text = report.to_string(args.verbose);
  if (!text.empty() && text.back() != '\n') text += '\n';
  fmt::print(out, "{} -> {}\n{}", args.input, args.output, text);
  if (!args.verbose) {
    const passes::LayoutPlan layout = passes::current_layout(*graph);
    fmt::print(out, "layout: {} of {} convs with channels_last weights, {} permute{}",
               layout.channels_last_weights, layout.convs, layout.permutes.size(),
               layout.permutes.size() == 1 ? "" : "s");
    for (const passes::LayoutPermute& p : layout.permutes) {
      fmt::print(out, "; {} {}→{} at {}", p.value,
                 p.from == MemoryFormat::ChannelsLast ? "NHWC" : "NCHW",
                 p.to == MemoryFormat::ChannelsLast ? "NHWC" : "NCHW", p.node);
    }
    fmt::print(out, " (--verbose: the plan per node)\n");
  }
  if (args.verify) {
    fmt::print(out,
               "verify: max |OUT - IN| = {:.3g} (in memory {:.3g}), max |IN| = {:.3g}, "
               "tolerance 1e-4 * max(1, max|IN|): ok\n",
               written.max_abs, in_memory.max_abs, written.reference_max_abs);
  }
  return 0;
}

}  // namespace refold::cli
