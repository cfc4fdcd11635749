// docs/reliability.md G1: --max-memory bounds the tensors a command allocates, activations
// included. Models that would need far more (Resize ×1000, Expand to a huge shape) make
// `refold run` exit 1 with a message naming the node, before the memory is taken, and write no
// output.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "refold/io/npy.h"
#include "refold/tensor.h"
#include "testing/builders.h"
#include "testing/onnx_builder.h"
#include "testing/run_cli.h"

namespace refold {
namespace {

namespace fs = std::filesystem;
using testing::CliRun;
using testing::OnnxBuilder;
using testing::run_cli;
using testing::TempDir;

// x[1, 1, 8, 8] → Resize(nearest, scales [1, 1, 1000, 1000]) → y[1, 1, 8000, 8000]: 244 MiB.
OnnxBuilder resize_by_1000() {
  OnnxBuilder b;
  b.input("x", {1, 1, 8, 8}).output("y");
  b.initializer("scales", testing::values({1, 1, 1000, 1000}, {4}));
  b.node("Resize", {"x", "", "scales"}, {"y"}, "up").attr_string("mode", "nearest");
  return b;
}

// x[1] → Expand(shape [100000, 100000]) → y: 37 GiB.
OnnxBuilder expand_to_huge() {
  OnnxBuilder b;
  b.input("x", {1}).output("y");
  Tensor shape = empty({2}, DType::Int64);
  shape.data<std::int64_t>()[0] = 100'000;
  shape.data<std::int64_t>()[1] = 100'000;
  b.initializer("shape", shape);
  b.node("Expand", {"x", "shape"}, {"y"}, "grow");
  return b;
}

struct Case {
  const char* what;
  OnnxBuilder model;
  Shape input;
  std::string message;
};

TEST(CliMemoryLimit, RunRefusesHugeActivationsNamingTheNode) {
  const Case cases[] = {
      {"resize",
       resize_by_1000(),
       {1, 1, 8, 8},
       "refold: error: Resize 'up': would allocate 244.1 MiB (float32[1, 1, 8000, 8000]) with "},
      {"expand",
       expand_to_huge(),
       {1},
       "refold: error: Expand 'grow': would allocate 37.3 GiB (float32[100000, 100000]) with "},
  };
  for (const Case& c : cases) {
    TempDir dir;
    const fs::path model = c.model.save(dir / "model.onnx");
    io::save_npy(testing::iota(c.input), dir / "x.npy");
    const fs::path out = dir / "out";
    for (const char* optimize : {"", " --no-optimize"}) {
      const CliRun run =
          run_cli("run " + model.string() + " --input x=" + (dir / "x.npy").string() + " -o " +
                  out.string() + " --max-memory 64MB" + optimize);
      EXPECT_EQ(run.exit_code, 1) << c.what << optimize << ": " << run.output;
      EXPECT_NE(run.output.find(c.message), std::string::npos) << c.what << ": " << run.output;
      EXPECT_NE(run.output.find("> memory limit 64.0 MiB (set_memory_limit, --max-memory)"),
                std::string::npos)
          << c.what << ": " << run.output;
      EXPECT_FALSE(fs::exists(out / "y.npy")) << c.what;
    }
  }
}

TEST(CliMemoryLimit, RunWithinTheLimitSucceeds) {
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {1, 1, 8, 8}).output("y");
  b.initializer("scales", testing::values({1, 1, 10, 10}, {4}));
  b.node("Resize", {"x", "", "scales"}, {"y"}, "up").attr_string("mode", "nearest");
  const fs::path model = b.save(dir / "model.onnx");
  io::save_npy(testing::iota({1, 1, 8, 8}), dir / "x.npy");
  const CliRun run = run_cli("run " + model.string() + " --input x=" + (dir / "x.npy").string() +
                             " -o " + (dir / "out").string() + " --max-memory 64MB");
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_TRUE(fs::exists(dir / "out" / "y.npy"));
}

TEST(CliMemoryLimit, OptimizeVerifyAndTestFailCleanly) {
  TempDir dir;
  const fs::path model = resize_by_1000().save(dir / "model.onnx");
  // optimize --verify runs the model on random inputs: refused, no output file.
  const fs::path out = dir / "fast.onnx";
  CliRun run =
      run_cli("optimize " + model.string() + " -o " + out.string() + " --verify --max-memory 64MB");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("Resize 'up': would allocate 244.1 MiB"), std::string::npos)
      << run.output;
  EXPECT_FALSE(fs::exists(out));
  // bench: refused the same way.
  run = run_cli("bench " + model.string() + " --runs 1 --warmup 0 --max-memory 64MB");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("Resize 'up': would allocate 244.1 MiB"), std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace refold
