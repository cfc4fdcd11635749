// refold::optimize_model — an ONNX model in, the optimized model out, with its report: what
// `refold optimize` does, as a library call (the CLI, refold::Session and the Python package's
// refold.optimize all go through it).
//
//   refold::OptimizeOptions options;          // verify = true: prove OUT equals IN
//   auto result = refold::optimize_model("model.onnx", "model.fast.onnx", options);
//   std::puts(result.report.to_string().c_str());
//   // model.onnx -> model.fast.onnx
//   // constant-folding: …  Conv 44 → 22, BatchNormalization 17 → 0, …
//   // layout: 22 of 22 convs with channels_last weights, 1 permute; …
//   // verify: max |OUT - IN| = 2.1e-06 …: ok
//
// Before any pass, a model whose input shapes are static is checked against itself: every node
// runs on stand-ins of its inputs' shapes, and graph outputs and declared intermediate values
// must get the types and static dims they are declared with — else a refold::Error names the
// node and both values and nothing is written (a Conv with group 2 over 3 channels, a Reshape
// that changes the element count, an output declared float32 computed as int64).
//
// Verification runs the model as imported (no pass applied) and the optimized one on the same
// deterministic N(0, 1) inputs (refold/model_inputs.h; symbolic dims need `input_shapes`) and
// requires max|OUT − IN| ≤ 1e-4 · max(1, max|IN|) (docs/testing.md), first in memory, then on
// the written file reloaded, as any runtime would read it. Past that, the model's own sensitivity
// to float32 rounding is measured (refold::rounding_sensitivity) and an error of at most
// OutputDiff::kRoundingMargin times it is rounding too: an ill-conditioned model (LeViT's
// attention) is computed only that well in float32 by any runtime. Beyond both is a
// refold::Error and nothing is written (a file already written is removed).
#pragma once

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>

#include "refold/graph/graph.h"
#include "refold/model_inputs.h"
#include "refold/onnx/onnx.h"
#include "refold/passes/layout.h"
#include "refold/passes/pipeline.h"

namespace refold {

struct OptimizeOptions {
  bool verify = true;
  InputShapes input_shapes;        // the shapes verification feeds (symbolic dims need one)
  std::set<std::string> disabled;  // pass names (passes::pass_names())
  onnx::LoadOptions load;
};

struct Verification {
  double max_abs_error = 0;            // max |OUT − IN|, the written file's (else in memory)
  double in_memory_max_abs_error = 0;  // the optimized graph before it was written
  double reference_max_abs = 0;        // max |IN|
  double tolerance = OutputDiff::kModelTolerance;
  // Measured only when an error is past the tolerance: the model's own sensitivity to float32
  // rounding (refold/model_inputs.h), of which the error may be up to OutputDiff::kRoundingMargin
  // times.
  std::optional<double> rounding_sensitivity;
  bool file_checked = false;  // the written file was reloaded and compared too
};

struct OptimizeReport {
  std::string input;   // the file (or the name given for bytes)
  std::string output;  // empty: not written
  passes::PipelineReport pipeline;
  passes::LayoutPlan layout;                 // the optimized graph's formats and permutes
  std::optional<Verification> verification;  // when OptimizeOptions::verify
  // What `refold optimize` prints (verbose: every pass's notes and the plan per node).
  std::string to_string(bool verbose = false) const;
  // What `refold optimize --json` prints.
  std::string to_json() const;
};

struct OptimizedModel {
  std::shared_ptr<graph::Graph> graph;
  OptimizeReport report;
};

// Loads `input`, optimizes it, verifies it (options.verify), and writes it to `output` unless
// `output` is empty. Errors name the file, the node and the value (docs/reliability.md).
OptimizedModel optimize_model(const std::filesystem::path& input,
                              const std::filesystem::path& output = {},
                              const OptimizeOptions& options = {});
// The same for a model held in memory; `name` stands for the file in messages (as for
// onnx::load_from_memory: external data is refused).
OptimizedModel optimize_model(std::span<const std::byte> model, const std::string& name,
                              const std::filesystem::path& output = {},
                              const OptimizeOptions& options = {});

}  // namespace refold
