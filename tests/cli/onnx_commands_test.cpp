// refold optimize / run / test / bench, run as a user runs them, on the PyTorch-exported models
// of tests/data/onnx/.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "refold/io/npy.h"
#include "refold/onnx/onnx.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/onnx_builder.h"
#include "testing/run_cli.h"

namespace refold {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::run_cli;

const std::string kData = REFOLD_TEST_DATA_DIR;
const std::string kRepVGG = kData + "/onnx/repvgg";

// A fresh scratch folder per test.
fs::path scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("refold_cli_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(CliOptimize, MergesTheBranchesVerifiesAndWritesTheModel) {
  const fs::path out = scratch("optimize") / "fast.onnx";
  const CliRun run =
      run_cli("optimize " + kRepVGG + "/model.onnx -o " + out.string() + " --verify");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("Conv 6 → 3"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("BatchNormalization 2 → 0"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("layout: 3 of 3 convs with channels_last weights, 1 permute"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("verify: max |OUT - IN|"), std::string::npos) << run.output;
  EXPECT_TRUE(fs::exists(out));
}

TEST(CliOptimize, JsonReportHasCountsLayoutAndError) {
  const fs::path out = scratch("optimize_json") / "fast.onnx";
  const CliRun run =
      run_cli("optimize " + kRepVGG + "/model.onnx -o " + out.string() + " --verify --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto j = nlohmann::json::parse(run.output);
  EXPECT_EQ(j["op_counts_before"]["Conv"], 6);
  EXPECT_EQ(j["op_counts_after"]["Conv"], 3);
  EXPECT_EQ(j["layout"]["permutes"], 1);
  EXPECT_LE(j["verify"]["max_abs_error"].get<double>(), 1e-4 * 2.1);
}

// DBB as its authors wrote it, exported by torch.onnx (BNAndPad's border writes as Pad +
// ScatterND and their index arithmetic, 424 nodes): one Conv and its Relu, proven by --verify.
TEST(CliOptimize, ExportedDiverseBranchBlockBecomesOneConvAndVerifies) {
  const fs::path out = scratch("optimize_dbb") / "fast.onnx";
  const std::string command =
      "optimize " + kData + "/onnx/dbb_k5/model.onnx -o " + out.string() + " --verify";
  CliRun run = run_cli(command + " --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto j = nlohmann::json::parse(run.output);
  EXPECT_EQ(j["op_counts_before"]["ScatterND"], 4);
  EXPECT_EQ(j["op_counts_after"], (nlohmann::json{{"Conv", 1}, {"Relu", 1}})) << run.output;
  run = run_cli(command);  // the verdict under docs/testing.md's tolerance
  EXPECT_NE(run.output.find("max(1, max|IN|): ok"), std::string::npos) << run.output;
}

TEST(CliOptimize, DisabledPassLeavesItsPatternAlone) {
  const fs::path out = scratch("optimize_disable") / "fast.onnx";
  const CliRun run = run_cli("optimize " + kRepVGG + "/model.onnx -o " + out.string() +
                             " --disable reparameterize,layout --json");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto j = nlohmann::json::parse(run.output);
  EXPECT_EQ(j["op_counts_after"]["Conv"], 6);  // branches not merged
  EXPECT_EQ(j["layout"]["channels_last_weights"], 0);
}

TEST(CliOptimize, BadInputsFailClearlyAndLeaveNoFile) {
  const fs::path dir = scratch("optimize_bad");
  const fs::path text = dir / "notes.onnx";
  std::ofstream(text) << "this is not a model\n";
  const fs::path out = dir / "out.onnx";
  CliRun run = run_cli("optimize " + text.string() + " -o " + out.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("refold: error: "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("notes.onnx"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(out));

  run = run_cli("optimize " + kRepVGG + "/model.onnx -o " + out.string() + " --disable nope");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("reparameterize"), std::string::npos) << run.output;  // valid names
  EXPECT_FALSE(fs::exists(out));

  run = run_cli("optimize " + kRepVGG + "/model.onnx -o " + out.string() + " --max-memory 1KB");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("memory budget"), std::string::npos) << run.output;
  EXPECT_FALSE(fs::exists(out));
}

TEST(CliRun, WritesEachOutputAsNpy) {
  const fs::path dir = scratch("run");
  const CliRun run = run_cli("run " + kRepVGG + "/model.onnx --input input=" + kRepVGG +
                             "/test_data_set_0/input_0.pb -o " + dir.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const Tensor got = io::load_npy(dir / "output.npy");
  const Tensor expected = onnx::load_tensor(kRepVGG + "/test_data_set_0/output_0.pb");
  EXPECT_TRUE(testing::model_close(got, expected));
}

TEST(CliRun, NamesAMissingOrUnknownInput) {
  const fs::path dir = scratch("run_bad");
  CliRun run = run_cli("run " + kRepVGG + "/model.onnx -o " + dir.string());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("missing --input input=FILE"), std::string::npos) << run.output;
  run = run_cli("run " + kRepVGG + "/model.onnx --input input=" + kRepVGG +
                "/test_data_set_0/input_0.pb --input extra=x.npy -o " + dir.string());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("--input extra: the model has no input 'extra' (inputs: "),
            std::string::npos)
      << run.output;
}

// A model exported with dynamic batch and size (x [N, 4, H, W] → Conv 3×3 pad 1 → Relu):
// optimized once, verified and run at the sizes --input-shape gives.
TEST(CliInputShape, DynamicModelOptimizesOnceAndRunsAtAnySize) {
  const fs::path dir = scratch("input_shape");
  testing::OnnxBuilder b(17, 8);
  Generator gen(5);
  b.input("x", {"N", 4, "H", "W"}).output("y", {"N", 4, "H", "W"});
  b.initializer("w", testing::uniform({4, 4, 3, 3}, 0.3, gen));
  b.node("Conv", {"x", "w"}, {"c"}, "conv").attr_ints("pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu");
  const std::string model = b.save(dir / "dynamic.onnx").string();
  const std::string optimized = (dir / "opt.onnx").string();

  CliRun run = run_cli("optimize " + model + " -o " + optimized + " --verify");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("input 'x': dim 2 is symbolic ('H'); give its size (--input-shape "
                            "x=…) or data (--input)"),
            std::string::npos)
      << run.output;
  run = run_cli("optimize " + model + " -o " + optimized + " --verify --input-shape x=2x4x9x7");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("verify:"), std::string::npos) << run.output;
  for (const std::string shape : {"1x4x8x8", "3x4x5x11"}) {
    run = run_cli("run " + optimized + " --input-shape x=" + shape + " -o " + dir.string());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const Tensor y = io::load_npy(dir / "y.npy");
    EXPECT_EQ(fmt::format("{}", fmt::join(y.sizes(), "x")), shape);
  }
  run = run_cli("bench " + model + " --input-shape x=1x4x16x16 --runs 1 --warmup 0");
  EXPECT_EQ(run.exit_code, 0) << run.output;

  for (const auto& [spec, message] : std::vector<std::pair<std::string, std::string>>{
           {"x=1x5x8x8", "--input-shape x: dim 1 is 5, but the model declares 4"},
           {"x=1x4x8", "--input-shape x: 3 dims given, the model declares 4"},
           {"z=1x4x8x8", "--input-shape z: the model has no input 'z' (inputs: "},
           {"x=1x4xhx8", "--input-shape 'x=1x4xhx8': 'h' is not a size (a number ≥ 0)"},
           {"x", "--input-shape 'x': expected NAME=DxDx… (e.g. x=1x3x224x224)"}}) {
    run = run_cli("run " + model + " --input-shape " + spec + " -o " + dir.string());
    EXPECT_EQ(run.exit_code, 1) << spec;
    EXPECT_NE(run.output.find(message), std::string::npos) << run.output;
  }
}

TEST(CliTest, RunsTestFoldersAndCounts) {
  CliRun run = run_cli("test " + kData + "/onnx/repvgg " + kData + "/onnx/acnet");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("PASS repvgg"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("2 passed, 0 failed"), std::string::npos) << run.output;

  const fs::path empty = scratch("test_empty");
  run = run_cli("test " + kData + "/onnx/repvgg " + empty.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("FAIL refold_cli_test_empty"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("1 passed, 1 failed"), std::string::npos) << run.output;

  const fs::path skip = empty / "SKIPPED.md";
  std::ofstream(skip) << "- `refold_cli_test_empty`: nothing here\n";
  run = run_cli("test " + empty.string() + " --skip-list " + skip.string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("0 passed, 0 failed, 1 skipped"), std::string::npos) << run.output;
}

// A REFOLD_FLUSH_DENORMAL that is neither 0 nor 1 is refused by name and value, before any
// output is written.
TEST(CliTest, ABadFlushDenormalSettingIsRefused) {
  const fs::path out = scratch("flush_denormal");
  ASSERT_EQ(setenv("REFOLD_FLUSH_DENORMAL", "yes", 1), 0);
  const CliRun run = run_cli("run " + kData + "/onnx/nchw_ops/model.onnx --input-shape " +
                             "input=1x3x16x16 -o " + (out / "y").string());
  unsetenv("REFOLD_FLUSH_DENORMAL");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("REFOLD_FLUSH_DENORMAL ('yes') must be 0 or 1"), std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(out / "y"));
}

// REFOLD_VERBOSE=1 names every node as it runs, then the implementation of each kernel it calls.
TEST(CliTest, VerboseNamesEveryNodeAndItsKernels) {
  ASSERT_EQ(setenv("REFOLD_VERBOSE", "1", 1), 0);
  const CliRun run = run_cli("test " + kData + "/onnx/nchw_ops");
  unsetenv("REFOLD_VERBOSE");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("refold: node '/stem/conv/Conv' (Conv) runs Conv2d\nrefold: "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("refold: conv2d -> "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("refold: node '/Softmax' (Softmax) runs Softmax"), std::string::npos)
      << run.output;
  // Every node names what ran: the ops with a reference kernel alone too, and an op that only
  // moves data whether it made a view or copied (ops::ViewOp).
  EXPECT_NE(run.output.find("refold: node '/Constant' (Constant) runs Constant\n"
                            "refold: Constant -> reference (its only implementation)\n"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("refold: node '/Reshape' (Reshape) runs Reshape\n"
                            "refold: Reshape -> view\n"),
            std::string::npos)
      << run.output;
  std::istringstream lines(run.output);
  std::string line, node;
  bool dispatched = true;
  while (std::getline(lines, line)) {
    if (line.rfind("refold: node '", 0) == 0) {
      EXPECT_TRUE(dispatched) << node << " logged no implementation";
      node = line, dispatched = false;
    } else if (line.find(" -> ") != std::string::npos) {
      dispatched = true;
    }
  }
  EXPECT_TRUE(dispatched) << node << " logged no implementation";
  EXPECT_EQ(run_cli("test " + kData + "/onnx/nchw_ops").output.find("refold: node"),
            std::string::npos);
}

TEST(CliBench, TimesFourVariantsAndPlots) {
  const fs::path plot = scratch("bench") / "bench.svg";
  const CliRun run = run_cli("bench " + kRepVGG + "/model.onnx --runs 2 --warmup 0 --json --plot " +
                             plot.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto j = nlohmann::json::parse(run.output);
  ASSERT_EQ(j["variants"].size(), 4u);
  EXPECT_EQ(j["variants"][0]["name"], "imported NCHW");
  EXPECT_EQ(j["variants"][3]["name"], "optimized NHWC");
  // The merged model does less work than the training form.
  EXPECT_LT(j["variants"][3]["flops"].get<double>(), j["variants"][0]["flops"].get<double>());
  EXPECT_GT(j["variants"][0]["median_ms"].get<double>(), 0);
  EXPECT_GT(j["variants"][3]["peak_activation_bytes"].get<double>(), 0);
  std::ifstream svg(plot);
  std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("<svg"), std::string::npos);
  EXPECT_NE(text.find("optimized NHWC"), std::string::npos);
}

// --variant times only the variants named; one alone runs back to back. A wrong name, or
// --profile without the optimized NHWC variant, is refused with the name.
TEST(CliBench, VariantTimesOnlyTheOnesNamed) {
  CliRun run = run_cli("bench " + kRepVGG +
                       "/model.onnx --runs 2 --warmup 0 --json --variant optimized-nhwc");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  auto j = nlohmann::json::parse(run.output);
  ASSERT_EQ(j["variants"].size(), 1u);
  EXPECT_EQ(j["variants"][0]["name"], "optimized NHWC");
  EXPECT_GT(j["optimized_nhwc_ms_median"].get<double>(), 0);
  // Each timed run's time, for tools that want the distribution.
  ASSERT_EQ(j["variants"][0]["samples_ms"].size(), 2u);
  EXPECT_GT(j["variants"][0]["samples_ms"][0].get<double>(), 0);
  run = run_cli("bench " + kRepVGG +
                "/model.onnx --runs 2 --warmup 0 --json --variant imported-nchw --variant "
                "optimized-nhwc");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  j = nlohmann::json::parse(run.output);
  ASSERT_EQ(j["variants"].size(), 2u);
  EXPECT_EQ(j["variants"][0]["name"], "imported NCHW");
  run = run_cli("bench " + kRepVGG + "/model.onnx --runs 2 --variant fastest");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("--variant must be imported-nchw, imported-nhwc, optimized-nchw or "
                            "optimized-nhwc, got 'fastest'"),
            std::string::npos)
      << run.output;
  run = run_cli("bench " + kRepVGG + "/model.onnx --runs 2 --variant imported-nchw --profile");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("--profile profiles the optimized-nhwc variant"), std::string::npos)
      << run.output;
}

// --disable: the optimized variants skip those passes (the RepVGG block keeps its 6 convs);
// an unknown name fails with the valid ones.
TEST(CliBench, DisableLeavesPassesOutOfTheOptimizedVariants) {
  const fs::path profile = scratch("bench_disable") / "profile.json";
  const auto convs = [&](const std::string& flags) {
    const CliRun run =
        run_cli("bench " + kRepVGG + "/model.onnx --runs 1 --warmup 0 " +
                "--variant optimized-nhwc --profile-json " + profile.string() + flags);
    EXPECT_EQ(run.exit_code, 0) << run.output;
    std::ifstream in(profile);
    const auto j = nlohmann::json::parse(in);
    int count = 0;
    for (const auto& node : j["nodes"]) count += node["op_type"] == "Conv" ? 1 : 0;
    return count;
  };
  EXPECT_EQ(convs(" --disable reparameterize,bn-folding"), 6);
  EXPECT_LT(convs(""), 6);
  const CliRun bad = run_cli("bench " + kRepVGG + "/model.onnx --runs 1 --disable nope");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("group-merging"), std::string::npos) << bad.output;
}

// --profile: every node of the optimized model with its time, layout and the implementation
// its kernels chose; per op type the sum; the same as JSON, and the op types in the plot.
TEST(CliBench, ProfilesTheOptimizedModelNodeByNode) {
  const fs::path dir = scratch("bench_profile");
  const fs::path json = dir / "profile.json", plot = dir / "bench.svg";
  const std::string model = kRepVGG + "/model.onnx";
  CliRun run = run_cli("bench " + model + " --runs 2 --warmup 0 --profile --plot " + plot.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("profile of optimized NHWC (median per node of 2 runs)"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("conv2d: "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("NCHW→NHWC"), std::string::npos) << run.output;  // the one permute
  std::ifstream svg(plot);
  const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("time per op type"), std::string::npos);

  run = run_cli("bench " + model + " --runs 2 --warmup 0 --profile-json " + json.string());
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["nodes"].size(), 3u);  // 3 Conv: each block merged, its Relu fused
  int convs = 0;
  for (const auto& n : j["nodes"]) {
    EXPECT_GE(n["ms"].get<double>(), 0);
    if (n["op_type"] != "Conv") continue;
    ++convs;
    EXPECT_GT(n["flops"].get<double>(), 0);
    EXPECT_EQ(n["layout_out"], "NHWC");
    ASSERT_EQ(n["implementations"].size(), 1u) << n.dump();
    EXPECT_EQ(n["implementations"][0].get<std::string>().rfind("conv2d: ", 0), 0u);
  }
  EXPECT_EQ(convs, 3);
  EXPECT_EQ(j["op_types"].size(), 1u);
  EXPECT_GT(j["flops"].get<double>(), 0);
}

TEST(CliHelp, EveryCommandHasHelp) {
  for (const char* command : {"demo", "optimize", "run", "test", "bench"}) {
    const CliRun run = run_cli(std::string(command) + " --help");
    EXPECT_EQ(run.exit_code, 0) << command << run.output;
    EXPECT_NE(run.output.find("Usage"), std::string::npos) << command << run.output;
  }
}

}  // namespace
}  // namespace refold
