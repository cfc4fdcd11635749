// The ONNX backend test data Debian installs (docs/reliability.md "Peer test suite"): every model
// that loads saves back byte-identical, and every TensorProto .pb either loads or is refused by
// name for its data type (DOUBLE, STRING; the sequence/optional protos parse as segmented
// tensors).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "refold/error.h"
#include "refold/onnx/onnx.h"
#include "testing/onnx_builder.h"

namespace refold::onnx {
namespace {

namespace fs = std::filesystem;

const fs::path kData = "/usr/share/libonnx-testdata/data";

TEST(OnnxTestData, LoadedModelsSaveByteIdenticalAndTensorsLoad) {
  if (!fs::exists(kData)) GTEST_SKIP() << kData << " is not installed (libonnx-testdata)";
  testing::TempDir out;
  int loaded = 0;
  int tensors = 0;
  for (const char* suite : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    if (!fs::exists(kData / suite)) continue;
    for (const auto& dir : fs::directory_iterator(kData / suite)) {
      const fs::path model = dir.path() / "model.onnx";
      if (!fs::exists(model)) continue;
      std::shared_ptr<graph::Graph> g;
      try {
        g = load(model);
      } catch (const Error& e) {
        // Refusals are fine here (unsupported ops, old op versions …); they name the file.
        EXPECT_EQ(std::string(e.what()).rfind(model.string() + ": ", 0), 0u) << e.what();
        continue;
      }
      ++loaded;
      save(*g, out / "model.onnx");
      EXPECT_EQ(testing::read_file(out / "model.onnx"), testing::read_file(model)) << model;
      const fs::path data = dir.path() / "test_data_set_0";
      if (!fs::exists(data)) continue;
      for (const auto& pb : fs::directory_iterator(data)) {
        try {
          load_tensor(pb.path());
          ++tensors;
        } catch (const Error& e) {
          const std::string m = e.what();
          EXPECT_TRUE(m.find("unsupported") != std::string::npos) << m;
        }
      }
    }
  }
  // Conv, Relu, Add, BatchNormalization, pooling … tests: a floor, not an exact count.
  EXPECT_GT(loaded, 100);
  EXPECT_GT(tensors, 200);
}

}  // namespace
}  // namespace refold::onnx
