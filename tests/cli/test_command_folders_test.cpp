// `refold test` on crafted ONNX test folders (model.onnx + test_data_set_0/), shaped like the
// libonnx-testdata tests that used to be known failures: bfloat16 data stored as UINT16 bits and
// compared dtype-aware, Flatten of a 1-d input, a training-domain op, and --max-memory.
#include <gtest/gtest.h>

#include <bit>
#include <filesystem>
#include <string>
#include <vector>

#include "refold/onnx/onnx.h"
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
using TP = ::onnx::TensorProto;

// dir/<name>/model.onnx and an empty dir/<name>/test_data_set_0/; returns the folder.
fs::path folder(const fs::path& dir, const std::string& name, const OnnxBuilder& model) {
  const fs::path d = dir / name;
  fs::create_directories(d / "test_data_set_0");
  model.save(d / "model.onnx");
  return d;
}

// test_cast_FLOAT_to_BFLOAT16 as ONNX 1.12 wrote it: the expected bfloat16 output is the float32
// truncated (0x3EF5EEB0 → 0x3EF5) where refold rounds to nearest even (0x3EF6); one bfloat16 ulp
// is within the dtype-aware tolerance, two are not.
TEST(CliTestFolders, Bfloat16OutputsStoredAsUint16CompareWithinOneUlp) {
  TempDir dir;
  OnnxBuilder b(13);
  b.input("input", {2}).output("output", {2}, TP::BFLOAT16);
  b.node("Cast", {"input"}, {"output"}).attr_int("to", TP::BFLOAT16);
  Tensor x = empty({2});
  x.data<float>()[0] = std::bit_cast<float>(std::uint32_t{0x3EF5EEB0});
  x.data<float>()[1] = -3.0f;
  const fs::path ok = folder(dir.path(), "cast_truncated", b);
  onnx::save_tensor(x, "input", ok / "test_data_set_0/input_0.pb");
  testing::write_uint16_tensor(ok / "test_data_set_0/output_0.pb", {0x3EF5, 0xC040});
  const fs::path off = folder(dir.path(), "cast_two_ulps", b);
  onnx::save_tensor(x, "input", off / "test_data_set_0/input_0.pb");
  testing::write_uint16_tensor(off / "test_data_set_0/output_0.pb", {0x3EF4, 0xC040});

  // And the other way: a bfloat16 input stored as UINT16, cast to float exactly.
  OnnxBuilder w(13);
  w.input("input", {2}, TP::BFLOAT16).output("output", {2});
  w.node("Cast", {"input"}, {"output"}).attr_int("to", TP::FLOAT);
  const fs::path widen = folder(dir.path(), "cast_widen", w);
  testing::write_uint16_tensor(widen / "test_data_set_0/input_0.pb", {0x3EF5, 0xC040});
  Tensor y = empty({2});
  y.data<float>()[0] = std::bit_cast<float>(std::uint32_t{0x3EF50000});
  y.data<float>()[1] = -3.0f;
  onnx::save_tensor(y, "output", widen / "test_data_set_0/output_0.pb");

  const CliRun run = run_cli("test " + ok.string() + " " + off.string() + " " + widen.string());
  EXPECT_NE(run.output.find("PASS cast_truncated"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("PASS cast_widen"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("FAIL cast_two_ulps: as imported: test_data_set_0 output 0: element 0"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("2 passed, 1 failed"), std::string::npos) << run.output;
}

// test_operator_view: Flatten (axis 1) of a 1-d input is [n, 1].
TEST(CliTestFolders, FlattenOfA1dInputPasses) {
  TempDir dir;
  OnnxBuilder b(9);
  b.input("x", {3}).output("y", {3, 1});
  b.node("Flatten", {"x"}, {"y"}, "Flatten_0");
  const fs::path d = folder(dir.path(), "flatten_1d", b);
  onnx::save_tensor(testing::iota({3}), "x", d / "test_data_set_0/input_0.pb");
  onnx::save_tensor(testing::iota({3, 1}), "y", d / "test_data_set_0/output_0.pb");
  const CliRun run = run_cli("test " + d.string());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("PASS flatten_1d"), std::string::npos) << run.output;
}

// test_adagrad & co.: listed as an unsupported op of its domain (the conformance scripts file
// that under "Unsupported"), not as a missing ai.onnx import.
TEST(CliTestFolders, TrainingDomainOpsAreUnsupported) {
  TempDir dir;
  OnnxBuilder b;
  b.model().mutable_opset_import(0)->set_domain("ai.onnx.preview.training");
  b.model().mutable_opset_import(0)->set_version(1);
  b.input("X", {2}).input("G", {2}).output("X_new", {2});
  b.node("Momentum", {"X", "G"}, {"X_new"}, "Momentum_0")
      .proto()
      .set_domain("ai.onnx.preview.training");
  const fs::path d = folder(dir.path(), "momentum", b);
  const CliRun run = run_cli("test " + d.string());
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("FAIL momentum: as imported: "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("model.onnx: 1 unsupported op: node 'Momentum_0' "
                            "(ai.onnx.preview.training.Momentum): domain "
                            "'ai.onnx.preview.training' (op Momentum) is not supported"),
            std::string::npos)
      << run.output;
}

// docs/reliability.md G1 through `refold test`: the folder fails naming the node; the command
// goes on.
TEST(CliTestFolders, MaxMemoryBoundsTheRun) {
  TempDir dir;
  OnnxBuilder b;
  b.input("x", {1, 1, 8, 8}).output("y");
  b.initializer("scales", testing::values({1, 1, 1000, 1000}, {4}));
  b.node("Resize", {"x", "", "scales"}, {"y"}, "up").attr_string("mode", "nearest");
  const fs::path d = folder(dir.path(), "resize_1000", b);
  onnx::save_tensor(testing::iota({1, 1, 8, 8}), "x", d / "test_data_set_0/input_0.pb");
  onnx::save_tensor(testing::iota({1}), "y", d / "test_data_set_0/output_0.pb");
  const CliRun run = run_cli("test " + d.string() + " --max-memory 64MB");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_NE(run.output.find("FAIL resize_1000: as imported: Resize 'up': would allocate 244.1 MiB "
                            "(float32[1, 1, 8000, 8000]) with "),
            std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace refold
