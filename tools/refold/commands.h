// The ONNX commands of the refold CLI. Each returns the process exit code and prints to `out`;
// errors are thrown as refold::Error and reported by main().
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "refold/onnx/onnx.h"

namespace refold::cli {

// The whole CLI: parses argv (argv[0] is the program name), runs the command, prints errors as
// "refold: error: …" on stderr; returns the exit code.
int main(int argc, char** argv);

struct OptimizeArgs {
  onnx::LoadOptions load;  // --max-memory
  std::string input;
  std::string output;
  bool verify = false;
  bool json = false;
  bool verbose = false;
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224, for --verify's random inputs
  std::vector<std::string> disable;       // pass names
};
// `refold optimize IN.onnx -o OUT.onnx`: op counts before → after, the layout plan, and with
// --verify the max error of OUT against IN on random inputs (exit 1 when out of tolerance).
int optimize_command(const OptimizeArgs& args, std::FILE* out);

struct RunArgs {
  onnx::LoadOptions load;  // --max-memory
  std::string model;
  std::vector<std::string> inputs;        // NAME=FILE (.npy or TensorProto .pb)
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224: random data for inputs not given
  std::string output_dir;
  bool optimize = true;
};
// `refold run MODEL.onnx --input x=x.npy -o DIR`: writes DIR/<output name>.npy per output.
int run_command(const RunArgs& args, std::FILE* out);

struct TestArgs {
  onnx::LoadOptions load;  // --max-memory
  std::vector<std::string> dirs;
  std::string skip_list;  // a SKIPPED.md-style file: lines "- `test_name`: reason"
  bool verbose = false;
};
// `refold test DIR…`: ONNX test folders, each run as imported and optimized.
int test_command(const TestArgs& args, std::FILE* out);

struct BenchArgs {
  onnx::LoadOptions load;  // --max-memory
  std::string model;
  std::int64_t batch = 0;                 // 0: the model's own (symbolic batch → 1)
  std::vector<std::string> input_shapes;  // NAME=1x3x224x224, overriding the declared shape
  int threads = 0;                        // 0: refold's default
  std::string dtype = "f32";
  int runs = 20;
  int warmup = 3;
  bool json = false;
  std::string plot;          // an SVG bar chart
  bool profile = false;      // time the optimized NHWC model node by node
  std::string profile_json;  // …and write that profile as JSON here
  // --variant: the variants to time ("imported-nchw", "imported-nhwc", "optimized-nchw",
  // "optimized-nhwc"); empty: all four, interleaved. One alone runs back to back, as a server
  // (and a peer runtime's benchmark) runs one model.
  std::vector<std::string> variants;
  // --disable: passes the optimized variants skip too (what one pass is worth, side by side
  // with a run without the flag).
  std::vector<std::string> disable;
};
// `refold bench MODEL.onnx`: as imported vs optimized, NCHW vs planned NHWC.
int bench_command(const BenchArgs& args, std::FILE* out);

}  // namespace refold::cli
