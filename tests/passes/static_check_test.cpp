// A model whose declarations contradict themselves is refused by refold::optimize_model (so by
// `refold optimize` and refold.optimize) before anything is written, naming the node or value
// and both values (passes::detail::check_static_graph).
#include <gtest/gtest.h>

#include <filesystem>

#include "refold/onnx/onnx.h"
#include "refold/optimize.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

using testing::attrs;
using testing::GraphBuilder;
using testing::int64s;

namespace fs = std::filesystem;

// Optimizes the builder's model to a file: the error, and no file left behind.
std::string refusal(GraphBuilder& b) {
  const std::string bytes = onnx::save_to_bytes(b.graph());
  const fs::path out = fs::temp_directory_path() / "refold_static_check.onnx";
  fs::remove(out);
  OptimizeOptions options;
  options.verify = false;  // refused without running the model
  try {
    optimize_model(std::as_bytes(std::span(bytes.data(), bytes.size())), "bad.onnx", out, options);
  } catch (const Error& e) {
    EXPECT_FALSE(fs::exists(out));
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return {};
}

TEST(StaticCheck, ConvGroupsThatDoNotDivideTheChannels) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 3, 8, 8});
  b.output(b.node("Conv", {x, b.constant("w", randn({4, 2, 3, 3}))},
                  attrs({{"group", std::int64_t{2}}}), "grouped"));
  const std::string e = refusal(b);
  EXPECT_NE(e.find("Conv 'grouped' (Conv2d): conv2d: groups (2) must divide in_channels (3)"),
            std::string::npos)
      << e;
}

TEST(StaticCheck, AKernelLargerThanItsUnpaddedInput) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 2, 8, 8});
  b.output(b.conv(x, 2, 2, 11, {.name = "big"}));
  const std::string e = refusal(b);
  EXPECT_NE(e.find("Conv 'big' (Conv2d): conv2d: height: output size would be <= 0"),
            std::string::npos)
      << e;
}

TEST(StaticCheck, AReshapeThatChangesTheElementCount) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 8, 8});
  b.output(b.node("Reshape", {x, b.constant("s", int64s({1, 100}))}, {}, "flat"));
  const std::string e = refusal(b);
  EXPECT_NE(e.find("Reshape 'flat'"), std::string::npos) << e;
}

TEST(StaticCheck, AnOutputDeclaredFloatButComputedAsInt64) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4});
  b.output(b.node("Cast", {x}, attrs({{"to", std::int64_t{7}}}), "to_int"));
  const std::string e = refusal(b);
  EXPECT_NE(e.find("graph output 'to_int_out' is declared float32, but node 'to_int' (Cast) "
                   "computes int64"),
            std::string::npos)
      << e;
}

TEST(StaticCheck, AnOutputDeclaredWithOtherDims) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 8, 8});
  b.output(b.relu(x));
  b.graph().outputs[0].shape = std::vector<graph::Dim>{{1, ""}, {4, ""}, {8, ""}, {9, ""}};
  const std::string e = refusal(b);
  EXPECT_NE(e.find("graph output 'Relu_1_out' is declared [1, 4, 8, 9], but node 'Relu_1' "
                   "(Relu) computes [1, 4, 8, 8]"),
            std::string::npos)
      << e;
}

TEST(StaticCheck, AConcatOfMismatchedShapes) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 8, 8});
  const std::string y = b.input("y", {1, 4, 8, 7});
  b.output(b.node("Concat", {x, y}, attrs({{"axis", std::int64_t{1}}}), "cat"));
  const std::string e = refusal(b);
  EXPECT_NE(e.find("Concat 'cat'"), std::string::npos) << e;
}

TEST(StaticCheck, SymbolicDimsAndConsistentModelsPass) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 8, 8});
  b.graph().inputs[0].shape->at(2) = {-1, "H"};
  b.output(b.relu(b.conv(x, 4, 4, 3, {.pads = testing::kPad1})));
  const std::string bytes = onnx::save_to_bytes(b.graph());
  OptimizeOptions options;
  options.verify = false;
  EXPECT_NO_THROW(
      optimize_model(std::as_bytes(std::span(bytes.data(), bytes.size())), "ok.onnx", {}, options));
}

}  // namespace
}  // namespace refold
