// activation-fusion on linear products: MatMul by a constant matrix (or a Gemm that is a Linear)
// with its bias Add, a residual Add and an activation becomes one node whose module runs one
// oneDNN matmul (passes/fused_linear.h); the values stay the unfused graph's.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "passes/fused_linear.h"
#include "passes/passes.h"
#include "refold/nn/linear.h"
#include "refold/reference.h"
#include "testing/compare.h"
#include "testing/error_table.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::attrs;
using testing::GraphBuilder;
using testing::has_note;
using testing::notes_of;

const testing::Tolerance kFused{1e-5, 1e-5};

Tensor random(const Shape& sizes, std::uint64_t seed) {
  Generator gen(seed);
  return randn(sizes, {}, gen);
}

struct Chain {
  const char* name;
  // Adds the nodes after the product `y` (r: a second graph input of the product's sizes);
  // returns the final value.
  std::function<std::string(GraphBuilder&, const std::string& y, const std::string& r)> add;
  std::size_t parts;      // nodes fused, the product included
  Activation activation;  // of the fused Linear
  bool residual;          // the module is a FusedLinearAdd
};

std::vector<Chain> chains() {
  auto bias = [](GraphBuilder& b, const Shape& sizes) {
    std::vector<float> v(6);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = 0.1f * static_cast<float>(i) - 0.2f;
    return b.constant("b", testing::values(v, sizes));
  };
  return {
      {"bias then GELU (a transformer's fc1)",
       [=](GraphBuilder& b, const std::string& y, const std::string&) {
         const auto a = b.node("Add", {y, bias(b, {6})}, {}, "bias");
         return b.node("Gelu", {a}, {}, "act");
       },
       3, Activation::GELU, false},
      {"bias first, [1, 1, 6], then SiLU's pair",
       [=](GraphBuilder& b, const std::string& y, const std::string&) {
         const auto a = b.node("Add", {bias(b, {1, 1, 6}), y}, {}, "bias");
         const auto s = b.node("Sigmoid", {a}, {}, "sig");
         return b.node("Mul", {s, a}, {}, "silu");
       },
       4, Activation::SiLU, false},
      {"bias then the residual (x + proj(y))",
       [=](GraphBuilder& b, const std::string& y, const std::string& r) {
         const auto a = b.node("Add", {y, bias(b, {6})}, {}, "bias");
         return b.node("Add", {r, a}, {}, "shortcut");
       },
       3, Activation::None, true},
      {"no bias, the residual, then ReLU",
       [=](GraphBuilder& b, const std::string& y, const std::string& r) {
         const auto a = b.node("Add", {y, r}, {}, "shortcut");
         return b.node("Relu", {a}, {}, "act");
       },
       3, Activation::ReLU, true},
  };
}

TEST(LinearFusion, AProductTakesItsBiasResidualAndActivation) {
  for (const Chain& k : chains()) {
    SCOPED_TRACE(k.name);
    GraphBuilder b;
    b.set_opset(20);  // Gelu's
    const auto x = b.input("x", {2, 5, 8});
    const auto r = b.input("r", {2, 5, 6});
    const auto w = b.constant("w", random({8, 6}, 3));
    const auto y = b.node("MatMul", {x, w}, {}, "fc");
    const auto out = k.add(b, y, r);
    b.output(out);
    const std::vector<Tensor> in = {random({2, 5, 8}, 4), random({2, 5, 6}, 5)};
    const Tensor expected = b.run(in)[0];

    const passes::PassReport report = passes::fuse_activations(b.graph());
    EXPECT_TRUE(report.changed) << notes_of(report);
    EXPECT_TRUE(has_note(report, "fused MatMul 'fc'")) << notes_of(report);
    b.graph().verify();
    ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
    const graph::Node& fused = b.graph().nodes()[0];
    EXPECT_EQ(fused.name, "fc");
    EXPECT_EQ(fused.op_type, "MatMul");
    EXPECT_EQ(fused.outputs, std::vector<std::string>{out});
    EXPECT_EQ(fused.parts.size(), k.parts);
    std::shared_ptr<nn::Linear> linear;
    if (k.residual) {
      auto op = std::dynamic_pointer_cast<passes::FusedLinearAdd>(fused.module);
      ASSERT_NE(op, nullptr);
      EXPECT_EQ(fused.inputs.at(3), r);
      linear = op->linear();
    } else {
      linear = std::dynamic_pointer_cast<nn::Linear>(fused.module);
    }
    ASSERT_NE(linear, nullptr);
    EXPECT_EQ(linear->activation(), k.activation);
    EXPECT_TRUE(testing::all_close(b.run(in)[0], expected, kFused));
    testing::expect_modules_follow_data(b.graph(), in, b.run(in));
    EXPECT_FALSE(passes::fuse_activations(b.graph()).changed);  // idempotent
  }
}

// A Gemm that is a Linear (a classifier's hidden layer) takes its activation.
TEST(LinearFusion, AGemmThatIsALinearTakesItsActivation) {
  GraphBuilder b;
  const auto x = b.input("x", {3, 8});
  const auto w = b.constant("w", random({6, 8}, 3));
  const auto c = b.constant("c", random({6}, 4));
  const auto y = b.node("Gemm", {x, w, c}, attrs({{"transB", std::int64_t{1}}}), "fc");
  b.output(b.node("HardSwish", {y}, {}, "act"));
  const std::vector<Tensor> in = {random({3, 8}, 5)};
  const Tensor expected = b.run(in)[0];
  EXPECT_TRUE(passes::fuse_activations(b.graph()).changed);
  ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
  EXPECT_EQ(b.graph().nodes()[0].op_type, "Gemm");
  auto linear = std::dynamic_pointer_cast<nn::Linear>(b.graph().nodes()[0].module);
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->activation(), Activation::HardSwish);
  EXPECT_TRUE(testing::all_close(b.run(in)[0], expected, kFused));
  testing::expect_modules_follow_data(b.graph(), in, b.run(in));
}

// LeViT's Linear + BatchNorm1d, MatMul → Flatten → BatchNormalization → Reshape back: once the
// BN is folded into the product, the Flatten → Reshape pair gives the product's output its own
// shape back — the identity — and goes, so the product takes its bias, its activation (the MLP's
// HardSwish) and its residual Add (the block's shortcut). A pair that changes the shape stays.
TEST(LinearFusion, AReshapeRunThatGivesBackTheShapeDoesNotStopTheChain) {
  for (const bool residual : {false, true}) {
    SCOPED_TRACE(residual ? "residual" : "activation");
    GraphBuilder b(44);
    const auto x = b.input("x", {2, 5, 8});
    const auto r = b.input("r", {2, 5, 16});
    const auto y =
        b.node("MatMul", {x, b.constant("w", testing::uniform({8, 16}, 0.5, b.generator()))});
    const auto flat = b.node("Flatten", {y}, attrs({{"axis", std::int64_t{2}}}), "flatten");
    const auto back =
        b.node("Reshape", {b.bn(flat, 16), b.constant("shape", testing::int64s({2, 5, 16}))}, {},
               "reshape");
    b.output(residual ? b.node("Add", {r, back}, {}, "shortcut")
                      : b.node("HardSwish", {back}, {}, "act"));
    const std::vector<Tensor> in = {random({2, 5, 8}, 4), random({2, 5, 16}, 5)};
    const Tensor expected = b.run(in)[0];
    passes::fold_batch_norms(b.graph());
    const passes::PassReport report = testing::apply_pass(b, passes::fuse_activations);
    EXPECT_TRUE(has_note(report, "dropped Flatten 'flatten', Reshape 'reshape'"))
        << notes_of(report);
    ASSERT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
    EXPECT_EQ(b.graph().nodes()[0].parts.size(), 3u);  // MatMul, the BN's Add, act or shortcut
    EXPECT_TRUE(testing::all_close(b.run(in)[0], expected, kFused));
  }
  {  // Flatten to [10, 16] and Reshape to [2, 80]: a new shape, so the chain stops there.
    GraphBuilder b(44);
    const auto x = b.input("x", {2, 5, 8});
    const auto y =
        b.node("MatMul", {x, b.constant("w", testing::uniform({8, 16}, 0.5, b.generator()))});
    const auto flat = b.node("Flatten", {y}, attrs({{"axis", std::int64_t{2}}}));
    const auto wide = b.node("Reshape", {flat, b.constant("shape", testing::int64s({2, 80}))});
    b.output(b.node("HardSwish", {wide}, {}, "act"));
    const passes::PassReport report = testing::apply_pass(b, passes::fuse_activations);
    EXPECT_FALSE(has_note(report, "dropped")) << notes_of(report);
    EXPECT_EQ(b.count("HardSwish"), 1);
    EXPECT_EQ(b.count("Reshape"), 1);
  }
}

// A residual the Add broadcast runs the unfused steps, in the Add's operand order.
TEST(LinearFusion, ABroadcastResidualRunsUnfusedWithTheSameValues) {
  GraphBuilder b;
  const auto x = b.input("x", {2, 5, 8});
  const auto r = b.input("r", {1, 1, 6});
  const auto w = b.constant("w", random({8, 6}, 3));
  const auto y = b.node("MatMul", {x, w}, {}, "fc");
  b.output(b.node("Add", {y, r}, {}, "shortcut"));
  const std::vector<Tensor> in = {random({2, 5, 8}, 4), random({1, 1, 6}, 5)};
  const Tensor expected = b.run(in)[0];
  EXPECT_TRUE(passes::fuse_activations(b.graph()).changed);
  ASSERT_EQ(b.graph().nodes().size(), 1u);
  EXPECT_NE(std::dynamic_pointer_cast<passes::FusedLinearAdd>(b.graph().nodes()[0].module),
            nullptr);
  const Tensor got = b.run(in)[0];
  EXPECT_EQ(got.sizes(), expected.sizes());
  EXPECT_TRUE(testing::all_close(got, expected, kFused));
}

// What would change the values or the shape is left alone, with a reason where it is a near
// miss.
TEST(LinearFusion, DeclinedCandidatesAreLeftAlone) {
  struct Decline {
    const char* name;
    Shape bias;        // the Add's constant
    bool computed;     // the weight is a graph input, not a constant
    const char* note;  // "" when no note is expected
  };
  const std::vector<Decline> declines = {
      {"a bias per row, not per feature", {5, 1}, false, "not one value per feature"},
      {"a bias that enlarges the product", {1, 1, 1, 6}, false, "not one value per feature"},
      {"a computed weight", {6}, true, ""},
  };
  for (const Decline& d : declines) {
    SCOPED_TRACE(d.name);
    GraphBuilder b;
    const auto x = b.input("x", {2, 5, 8});
    const auto w = d.computed ? b.input("w", {8, 6}) : b.constant("w", random({8, 6}, 3));
    const auto y = b.node("MatMul", {x, w}, {}, "fc");
    const auto c = b.constant("c", random(d.bias, 4));
    b.output(b.node("Add", {y, c}, {}, "bias"));
    const std::string before = b.graph().dump();
    const passes::PassReport report = passes::fuse_activations(b.graph());
    EXPECT_FALSE(report.changed);
    EXPECT_EQ(b.graph().dump(), before);
    if (*d.note != '\0') {
      EXPECT_TRUE(has_note(report, d.note)) << notes_of(report);
    }
  }
}

TEST(LinearModule, SetActivationAndForwardWithResidualAreOnePrimitive) {
  nn::Linear fc(8, 6);
  const Tensor x = random({4, 8}, 1);
  const Tensor r = random({4, 6}, 2);
  const Tensor plain = fc.forward(x);
  fc.set_activation(Activation::LeakyReLU, 0.3);
  EXPECT_EQ(fc.activation(), Activation::LeakyReLU);
  EXPECT_DOUBLE_EQ(fc.negative_slope(), 0.3);
  EXPECT_TRUE(testing::all_close(fc.forward(x), reference::leaky_relu(plain, 0.3), kFused));
  EXPECT_TRUE(testing::all_close(fc.forward_with_residual(x, r),
                                 reference::leaky_relu(reference::add(plain, r), 0.3), kFused));
  EXPECT_TRUE(testing::throws_error([&] { fc.set_activation(static_cast<Activation>(42)); },
                                    "Linear: unknown activation (42)"));
  EXPECT_TRUE(testing::throws_error(
      [&] {
        fc.forward_with_residual(x, random({4, 5}, 3));
      },
      "residual"));
}

}  // namespace
}  // namespace refold
