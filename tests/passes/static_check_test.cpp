// A model whose declarations contradict themselves is refused by refold::optimize_model (so by
// `refold optimize` and refold.optimize) before anything is written, naming the node or value
// and both values (passes::detail::check_static_graph).
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "refold/onnx/onnx.h"
#include "refold/optimize.h"
#include "testing/graph_builder.h"

namespace refold {
namespace {

using testing::attrs;
using testing::GraphBuilder;
using testing::int64s;

namespace fs = std::filesystem;

// Declares dims of input `input` symbolic: {axis, name}.
void make_symbolic(GraphBuilder& b, std::size_t input,
                   const std::vector<std::pair<std::size_t, std::string>>& dims) {
  for (const auto& [axis, name] : dims) b.graph().inputs[input].shape->at(axis) = {-1, name};
}

bool accepted(GraphBuilder& b, const InputShapes& shapes = {}) {
  const std::string bytes = onnx::save_to_bytes(b.graph());
  OptimizeOptions options;
  options.verify = false;
  options.input_shapes = shapes;
  optimize_model(std::as_bytes(std::span(bytes.data(), bytes.size())), "ok.onnx", {}, options);
  return true;
}

// Optimizes the builder's model to a file: the error, and no file left behind.
std::string refusal(GraphBuilder& b, const InputShapes& shapes = {}) {
  const std::string bytes = onnx::save_to_bytes(b.graph());
  const fs::path out = fs::temp_directory_path() / "refold_static_check.onnx";
  fs::remove(out);
  OptimizeOptions options;
  options.verify = false;  // refused without running the model
  options.input_shapes = shapes;
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
  EXPECT_NE(e.find("graph output 'to_int_out' is declared float, but node 'to_int' (Cast) "
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

TEST(StaticCheck, AResizeWithTheWrongNumberOfScales) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 3, 8, 8});
  const std::string scales = b.constant("scales", from_values(std::vector<float>{1, 1, 2}, {3}));
  b.output(b.node("Resize", {x, "", scales}, {}, "up"));
  const std::string e = refusal(b);
  EXPECT_NE(e.find("Resize 'up'"), std::string::npos) << e;
  EXPECT_NE(e.find("3"), std::string::npos) << e;
}

// With symbolic dims, an error is refused only when no size of the symbols avoids it.
TEST(StaticCheck, SymbolicDimsRefuseWhatNoSizeAvoids) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 3, 8, 8});
  make_symbolic(b, 0, {{0, "N"}, {2, "H"}, {3, "W"}});
  const std::string w = b.constant("w", ones({2, 4, 3, 3}));
  b.output(b.node("Conv", {x, w}, {}, "conv"));
  const std::string e = refusal(b);
  EXPECT_NE(e.find("input has 3 channels, weight expects 4"), std::string::npos) << e;
  EXPECT_NE(e.find("(whatever sizes H, N, W take)"), std::string::npos) << e;
}

TEST(StaticCheck, SymbolicDimsAcceptWhatSomeSizeAllows) {
  // [N, 3, 8, 8] → [-1, 100] works whenever N is a multiple of 25.
  GraphBuilder reshape;
  const std::string x = reshape.input("x", {1, 3, 8, 8});
  make_symbolic(reshape, 0, {{0, "N"}});
  reshape.output(reshape.node("Reshape", {x, reshape.constant("s", int64s({-1, 100}))}, {}, "r"));
  EXPECT_TRUE(accepted(reshape));
  // A classifier whose Gemm needs H = W = 8, exported with symbolic H and W.
  GraphBuilder fixed;
  const std::string y = fixed.input("x", {1, 3, 8, 8});
  make_symbolic(fixed, 0, {{2, "H"}, {3, "W"}});
  const std::string flat = fixed.node("Flatten", {y}, {}, "flat");
  fixed.output(fixed.node("Gemm", {flat, fixed.constant("w", ones({10, 192}))},
                          attrs({{"transB", std::int64_t{1}}}), "fc"));
  EXPECT_TRUE(accepted(fixed));
  // ...but at a size the user gives, it is checked as it is.
  const std::string e = refusal(fixed, {{"x", {1, 3, 16, 16}}});
  EXPECT_NE(e.find("input has 768 features"), std::string::npos) << e;
  EXPECT_EQ(e.find("whatever"), std::string::npos) << e;
  EXPECT_TRUE(accepted(fixed, {{"x", {1, 3, 8, 8}}}));
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
