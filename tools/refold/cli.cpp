// The refold command-line tool's argument parsing and dispatch (refold::cli::main). Uses the
// public API only. The `refold` executable (main.cpp) and `python -m refold` both call it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "commands.h"
#include "demo.h"
#include "refold/refold.h"

namespace refold::cli {

int main(int argc, char** argv) {
  CLI::App app{"refold: fast convolutional networks on CPUs"};
  app.set_version_flag("--version", std::string("refold ") + std::string(refold::version()));
  app.require_subcommand(0, 1);

  CLI::App* demo = app.add_subcommand(
      "demo", "Both seeds, shown: the memory-format permute count and re-parameterization");

  OptimizeArgs optimize_args;
  CLI::App* optimize = app.add_subcommand(
      "optimize", "Re-parameterize, fold and lay out an ONNX model; write the result as ONNX");
  optimize->add_option("input", optimize_args.input, "The ONNX model")->required();
  optimize->add_option("-o,--output", optimize_args.output, "Where to write it")->required();
  optimize->add_flag("--verify", optimize_args.verify,
                     "Compare the output model with the input on random inputs");
  optimize
      ->add_option("--disable", optimize_args.disable,
                   fmt::format("Passes to skip: {}", fmt::join(passes::pass_names(), ", ")))
      ->delimiter(',');
  optimize->add_flag("--json", optimize_args.json, "Print the report as JSON");
  optimize->add_option("--input-shape", optimize_args.input_shapes,
                       "NAME=1x3x224x224: the shape --verify feeds (symbolic dims need one)");
  optimize->add_flag("-v,--verbose", optimize_args.verbose,
                     "Say what each pass did and why it declined");

  RunArgs run_args;
  CLI::App* run = app.add_subcommand("run", "Run an ONNX model on given inputs");
  run->add_option("model", run_args.model, "The ONNX model")->required();
  run->add_option("-i,--input", run_args.inputs, "NAME=FILE (.npy or TensorProto .pb)");
  run->add_option("-o,--output", run_args.output_dir, "Folder for <output>.npy files")->required();
  run->add_flag("!--no-optimize", run_args.optimize, "Run the model as imported");
  run->add_option("--input-shape", run_args.input_shapes,
                  "NAME=1x3x224x224: random N(0, 1) data of that shape for an input not given");

  TestArgs test_args;
  CLI::App* test = app.add_subcommand(
      "test", "Run ONNX test folders (model.onnx + test_data_set_*), imported and optimized");
  test->add_option("dirs", test_args.dirs, "Test folders")->required();
  test->add_option("--skip-list", test_args.skip_list,
                   "A file of lines \"- `test_name`: reason\" to skip");
  test->add_flag("-v,--verbose", test_args.verbose, "List skipped tests too");

  BenchArgs bench_args;
  CLI::App* bench =
      app.add_subcommand("bench", "Time a model as imported vs optimized, NCHW vs planned NHWC");
  bench->add_option("model", bench_args.model, "The ONNX model")->required();
  bench->add_option("--batch", bench_args.batch, "Batch size (default: the model's)");
  bench->add_option("--threads", bench_args.threads, "Threads (default: physical cores)");
  bench->add_option("--dtype", bench_args.dtype, "f32 or bf16");
  bench->add_option("--runs", bench_args.runs, "Timed runs per variant (default 20)");
  bench->add_option("--warmup", bench_args.warmup, "Untimed runs first (default 3)");
  bench->add_flag("--json", bench_args.json, "Print the results as JSON");
  bench
      ->add_option("--disable", bench_args.disable,
                   fmt::format("Passes the optimized variants skip: {}",
                               fmt::join(passes::pass_names(), ", ")))
      ->delimiter(',');
  bench->add_option("--variant", bench_args.variants,
                    "Time only these: imported-nchw, imported-nhwc, optimized-nchw, "
                    "optimized-nhwc (repeatable; default all four, interleaved; one alone runs "
                    "back to back)");
  bench->add_option("--input-shape", bench_args.input_shapes,
                    "NAME=1x3x224x224: the input's shape (symbolic dims need one)");
  bench->add_option("--plot", bench_args.plot,
                    "Draw the comparison (and with --profile the time per op type) as an SVG "
                    "bar chart");
  bench->add_flag("--profile", bench_args.profile,
                  "Time the optimized model node by node: per op type and per node, the time, "
                  "share, GFLOP/s, GB/s, layout and the implementation that ran");
  bench->add_option("--profile-json", bench_args.profile_json,
                    "Write that profile as JSON to this file (implies --profile)");

  for (auto [command, load] : {std::pair{optimize, &optimize_args.load},
                               {run, &run_args.load},
                               {test, &test_args.load},
                               {bench, &bench_args.load}}) {
    command
        ->add_option("--max-memory", load->max_memory,
                     "Refuse models that would make refold allocate more (e.g. 2GB; default 8GB)")
        ->transform(CLI::AsSizeValue(false));
  }
  CLI11_PARSE(app, argc, argv);
  // docs/reliability.md G1: the tensors a command allocates (activations too, not only the file and
  // its initializers) stay within --max-memory; an allocation past it is a refold::Error.
  for (auto [command, load] : {std::pair{optimize, &optimize_args.load},
                               {run, &run_args.load},
                               {test, &test_args.load},
                               {bench, &bench_args.load}}) {
    if (command->parsed()) refold::set_memory_limit(static_cast<std::size_t>(load->max_memory));
  }
  try {
    if (demo->parsed()) return run_demo(stdout);
    if (optimize->parsed()) return optimize_command(optimize_args, stdout);
    if (run->parsed()) return run_command(run_args, stdout);
    if (test->parsed()) return test_command(test_args, stdout);
    if (bench->parsed()) return bench_command(bench_args, stdout);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "refold: error: %s\n", e.what());
    return 1;
  }
  std::fputs(app.help().c_str(), stdout);
  return 0;
}

}  // namespace refold::cli
