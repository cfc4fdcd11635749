// External tensor data (docs/reliability.md section D): the bytes must come from a regular file
// inside the model's folder, from the range the entries name, and nothing else.
#include "testing/onnx_builder.h"  // first: it sets the ONNX_ML definitions

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "refold/error.h"
#include "refold/functional.h"
#include "refold/onnx/onnx.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::onnx {
namespace {

namespace fs = std::filesystem;
using testing::OnnxBuilder;
using testing::TempDir;

// y = Relu(Conv(x, w)), w [2, 3, 1, 1] = 24 bytes stored as external data.
const Tensor& weight() {
  static const Tensor w = testing::iota({2, 3, 1, 1}, 1.0f);
  return w;
}

std::string weight_bytes() { return testing::tensor_proto("w", weight()).raw_data(); }

OnnxBuilder model_with(const std::vector<std::pair<std::string, std::string>>& entries) {
  OnnxBuilder b;
  b.input("x", {1, 3, 2, 2}).output("y");
  b.initializer("w", weight());
  auto& w = b.initializer_proto(0);
  w.clear_raw_data();
  w.set_data_location(::onnx::TensorProto::EXTERNAL);
  for (const auto& [key, value] : entries) {
    auto* e = w.add_external_data();
    e->set_key(key);
    e->set_value(value);
  }
  b.node("Conv", {"x", "w"}, {"c"}, "conv");
  b.node("Relu", {"c"}, {"y"}, "relu");
  return b;
}

void expect_runs(const std::shared_ptr<graph::Graph>& g) {
  const Tensor x = randn({1, 3, 2, 2});
  const Tensor expected = functional::relu(functional::conv2d(x, weight()));
  EXPECT_TRUE(testing::all_close(g->run({x})[0], expected, testing::Tolerance::op_f32()));
}

TEST(OnnxExternalData, LoadsFromTheModelFolder) {
  TempDir dir;
  testing::write_file(dir / "w.bin", weight_bytes());
  expect_runs(load(model_with({{"location", "w.bin"}}).save(dir / "model.onnx")));

  // offset + length into a shared file; "checksum" is ignored; a path that normalizes inside.
  fs::create_directories(dir / "sub");
  testing::write_file(dir / "sub" / "all.bin", std::string(16, 'x') + weight_bytes() + "tail");
  expect_runs(load(model_with({{"location", "sub/../sub/all.bin"},
                               {"offset", "16"},
                               {"length", "24"},
                               {"checksum", "whatever"}})
                       .save(dir / "model2.onnx")));

  // A symlink that stays inside the folder is fine.
  ASSERT_EQ(::symlink("w.bin", (dir / "link.bin").c_str()), 0);
  expect_runs(load(model_with({{"location", "link.bin"}}).save(dir / "model3.onnx")));
}

TEST(OnnxExternalData, D1ToD9BadLocationsAndRanges) {
  TempDir dir;
  TempDir outside;
  testing::write_file(dir / "w.bin", weight_bytes());
  testing::write_file(outside / "secret.bin", weight_bytes());
  // D4: a symlink inside pointing outside; D5: a hard link to a file outside.
  ASSERT_EQ(::symlink((outside / "secret.bin").c_str(), (dir / "escape.bin").c_str()), 0);
  ASSERT_EQ(::link((outside / "secret.bin").c_str(), (dir / "hard.bin").c_str()), 0);
  fs::create_directories(dir / "folder");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);

  int count = 0;
  auto row = [&](const std::string& what, std::vector<std::pair<std::string, std::string>> entries,
                 const std::string& message) {
    const auto file = model_with(entries).save(dir / ("model" + std::to_string(count++) + ".onnx"));
    return testing::ErrorCase{what, [file] { load(file); }, message};
  };
  testing::expect_errors({
      row("D1 parent escape", {{"location", "../../../../etc/passwd"}},
          "initializer 'w': external data location '../../../../etc/passwd' leaves the model "
          "folder"),
      row("D2 absolute", {{"location", "/etc/passwd"}},
          "external data location '/etc/passwd' is absolute"),
      row("D3 nested escape", {{"location", "sub/../../x"}},
          "external data location 'sub/../../x' leaves the model folder"),
      row("D4 symlink out", {{"location", "escape.bin"}}, "outside the model folder"),
      row("D5 hard link", {{"location", "hard.bin"}}, "has 2 hard links"),
      row("D6 negative offset", {{"location", "w.bin"}, {"offset", "-1"}},
          "external data offset '-1' is not a non-negative integer"),
      row("D6 non-numeric length", {{"location", "w.bin"}, {"length", "0x18"}},
          "external data length '0x18' is not a non-negative integer"),
      row("D6 beyond EOF", {{"location", "w.bin"}, {"offset", "8"}},
          "is 24 bytes; offset 8 + length 24 lies beyond its end"),
      row("D6 length mismatch", {{"location", "w.bin"}, {"length", "20"}},
          "external data length 20 differs from the tensor's size of 24 bytes"),
      row("D7 directory", {{"location", "folder"}}, "'folder' is not a regular file"),
      row("D7 FIFO", {{"location", "fifo"}}, "'fifo' is not a regular file"),
      row("D7 /dev/zero", {{"location", "/dev/zero"}}, "is absolute"),
      row("D8 ORT memory address", {{"location", "*/_ORT_MEM_ADDR_/*"}}, "cannot be opened"),
      row("D9 no location", {{"offset", "0"}}, "external data without a 'location'"),
      row("D9 unknown key", {{"location", "w.bin"}, {"basepath", "/"}},
          "unknown external data key 'basepath'"),
      row("D9 repeated key", {{"location", "w.bin"}, {"location", "x.bin"}},
          "external data key 'location' given twice"),
      row("empty location", {{"location", ""}}, "external data location is empty"),
      row("missing file", {{"location", "nope.bin"}}, "'nope.bin' cannot be opened"),
  });
}

TEST(OnnxExternalData, D10FromMemoryNeedsAnExplicitFolder) {
  TempDir dir;
  testing::write_file(dir / "w.bin", weight_bytes());
  const std::string bytes = model_with({{"location", "w.bin"}}).bytes();
  const auto span = std::as_bytes(std::span(bytes.data(), bytes.size()));
  EXPECT_TRUE(
      testing::throws_error([&] { load_from_memory(span, "mem"); },
                            "mem: initializer 'w': external data needs the model's folder"));
  expect_runs(load_from_memory(span, "mem", dir.path()));
  fs::create_directories(dir / "folder");
  const std::string escape = model_with({{"location", "../w.bin"}}).bytes();
  EXPECT_TRUE(testing::throws_error(
      [&] {
        load_from_memory(std::as_bytes(std::span(escape.data(), escape.size())), "mem",
                         dir / "folder");
      },
      "leaves the model folder"));
}

}  // namespace
}  // namespace refold::onnx
