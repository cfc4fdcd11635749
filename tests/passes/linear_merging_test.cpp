// linear-merging: a per-feature affine node before Gemm/MatMul products or convs, and two
// products of one value added or subtracted, become one layer where that is exact, and stay as
// they are (bit-identical) where it is not.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "passes/passes.h"
#include "refold/passes/pipeline.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::apply_pass;
using testing::attrs;
using testing::GraphBuilder;
using testing::has_note;
using testing::notes_of;
using Counts = std::map<std::string, int>;

std::string random_constant(GraphBuilder& b, const Shape& shape) {
  return b.constant("k", testing::uniform(shape, 1, b.generator()));
}

// A Linear as torch.onnx writes it: Gemm(x, W [out, in], b) with transB = 1.
std::string linear(GraphBuilder& b, const std::string& x, std::int64_t in, std::int64_t out) {
  return b.node("Gemm", {x, random_constant(b, {out, in}), random_constant(b, {out})},
                attrs({{"transB", std::int64_t{1}}}));
}

passes::PassReport merge_and_compare(GraphBuilder& b) {
  return apply_pass(b, passes::merge_linear_layers);
}

void expect_unchanged(GraphBuilder& b) {
  testing::expect_left_alone(b, passes::merge_linear_layers);
}

// conv-input-folding, the same fold into convs (linear_merging.cpp).
passes::PassReport fold_convs_and_compare(GraphBuilder& b) {
  return apply_pass(b, passes::fold_conv_inputs);
}

TEST(LinearMerging, BatchNormBeforeALinearFoldsIntoIt) {
  GraphBuilder b(1);
  const std::string x = b.input("x", {3, 8});
  b.output(linear(b, b.bn(x, 8), 8, 5));
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"Gemm", 1}})) << notes_of(r);
  EXPECT_TRUE(has_note(r, "folded BatchNormalization 'BatchNormalization_1' into the 1 layer"))
      << notes_of(r);
}

// Gemm's α, β and a weight not transposed; one affine node read by two products.
TEST(LinearMerging, OneAffineNodeReadByTwoProducts) {
  GraphBuilder b(2);
  const std::string x = b.input("x", {3, 8});
  const std::string scaled =
      b.node("Sub", {b.mul(x, random_constant(b, {8})), random_constant(b, {1, 8})});
  b.output(b.node("Gemm", {scaled, random_constant(b, {8, 6}), random_constant(b, {1, 6})},
                  attrs({{"alpha", 0.5f}, {"beta", 2.0f}})));
  b.output(linear(b, scaled, 8, 4));
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"Gemm", 2}})) << notes_of(r);
}

// A MatMul over tokens [B, N, C]: a shift before it becomes an Add of its bias after it.
TEST(LinearMerging, AffineBeforeAMatMulOnTokens) {
  GraphBuilder b(3);
  const std::string x = b.input("x", {2, 5, 8});
  const std::string shifted = b.add(b.mul(x, random_constant(b, {8})), random_constant(b, {8}));
  b.output(b.node("MatMul", {shifted, random_constant(b, {8, 16})}));
  const passes::PassReport r = merge_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"MatMul", 1}, {"Add", 1}})) << notes_of(r);
}

// A pre-norm BatchNorm read by convs (NextViT's and MaxViT's blocks, MobileNetV4's attention:
// q, k and v): a 1×1 conv, a grouped one and an unpadded strided 3×3 read every tap from the
// input, so the BN's scale and shift fold into each; a padded conv takes a pure scale.
TEST(LinearMerging, AffineBeforeConvsFoldsIntoThem) {
  GraphBuilder b(13);
  const std::string x = b.input("x", {2, 8, 9, 9});
  const std::string normed = b.bn(x, 8);
  b.output(b.conv(normed, 8, 16, 1));
  b.output(b.conv(normed, 8, 6, 1, {.groups = 2}));
  b.output(b.conv(normed, 8, 8, 3, {.stride = 2, .groups = 8}));
  const std::string scaled = b.mul(x, random_constant(b, {1, 8, 1, 1}));
  b.output(b.conv(scaled, 8, 4, 3, {.pads = testing::kPad1}));
  // linear-merging takes products only; conv-input-folding, after reparameterize, the convs.
  testing::expect_left_alone(b, passes::merge_linear_layers);
  const passes::PassReport r = fold_convs_and_compare(b);
  EXPECT_EQ(b.op_counts(), (Counts{{"Conv", 4}})) << notes_of(r);
  EXPECT_TRUE(has_note(r, "folded BatchNormalization 'BatchNormalization_1' into the 3 layers"))
      << notes_of(r);
}

// RepViT's, LeViT's classifier: (BN → Linear) + (BN → Linear) of one value, halved. This pass
// folds the BNs and sums the heads; the pipeline folds the halving too.
TEST(LinearMerging, AHeadAndItsDistillationHeadBecomeOneGemm) {
  const auto build = [](GraphBuilder& b) {
    const std::string x = b.input("x", {2, 8});
    const std::string sum = b.add(linear(b, b.bn(x, 8), 8, 5), linear(b, b.bn(x, 8), 8, 5));
    b.output(b.node("Div", {sum, b.constant("two", testing::values({2.0f}, {}))}));
  };
  {
    GraphBuilder b(4);
    build(b);
    const passes::PassReport r = merge_and_compare(b);
    EXPECT_EQ(b.op_counts(), (Counts{{"Gemm", 1}, {"Div", 1}})) << notes_of(r);
    EXPECT_TRUE(has_note(r, "summed by Add 'Add_1' into one Gemm")) << notes_of(r);
  }
  {
    GraphBuilder b(4);
    build(b);
    const std::vector<Tensor> x = b.random_inputs();
    const Tensor before = b.run(x)[0];
    passes::optimize(b.graph());
    EXPECT_EQ(b.op_counts(), (Counts{{"Gemm", 1}}));
    EXPECT_TRUE(testing::model_close(b.run(x)[0], before));
  }
}

// Differences and mixed forms: Gemm (transB 1) − MatMul, three MatMuls summed in a chain.
TEST(LinearMerging, SumsAndDifferencesOfProducts) {
  {
    GraphBuilder b(5);
    const std::string x = b.input("x", {3, 8});
    b.output(
        b.node("Sub", {linear(b, x, 8, 6), b.node("MatMul", {x, random_constant(b, {8, 6})})}));
    const passes::PassReport r = merge_and_compare(b);
    EXPECT_EQ(b.op_counts(), (Counts{{"Gemm", 1}})) << notes_of(r);
  }
  {
    GraphBuilder b(6);
    const std::string x = b.input("x", {2, 4, 8});
    const auto matmul = [&] { return b.node("MatMul", {x, random_constant(b, {8, 6})}); };
    b.output(b.add(b.add(matmul(), matmul()), matmul()));
    const passes::PassReport r = merge_and_compare(b);
    EXPECT_EQ(b.op_counts(), (Counts{{"MatMul", 1}})) << notes_of(r);
  }
}

TEST(LinearMerging, LeavesWhatIsNotExactAlone) {
  {  // the affine value is read by a Relu too
    GraphBuilder b(7);
    const std::string x = b.input("x", {3, 8});
    const std::string y = b.bn(x, 8);
    b.output(linear(b, y, 8, 5));
    b.output(b.node("Relu", {y}));
    expect_unchanged(b);
  }
  {  // BN normalizes axis 1 of a 3-d value; the product reads axis 2
    GraphBuilder b(8);
    const std::string x = b.input("x", {2, 8, 8});
    b.output(b.node("MatMul", {b.bn(x, 8), random_constant(b, {8, 4})}));
    expect_unchanged(b);
  }
  {  // a constant that is not one value per input feature
    GraphBuilder b(9);
    const std::string x = b.input("x", {3, 8});
    b.output(linear(b, b.mul(x, random_constant(b, {3, 1})), 8, 5));
    expect_unchanged(b);
  }
  {  // a constant, first, of a higher rank than the value: it broadcasts the value up
    GraphBuilder b(12);
    const std::string x = b.input("x", {3, 8});
    b.output(
        b.node("MatMul", {b.mul(random_constant(b, {1, 1, 8}), x), random_constant(b, {8, 4})}));
    expect_unchanged(b);
  }
  {  // a weight computed at run time, and transA
    GraphBuilder b(10);
    const std::string x = b.input("x", {3, 8});
    const std::string w = b.input("w", {5, 8});
    b.output(b.node("Gemm", {b.bn(x, 8), w}, attrs({{"transB", std::int64_t{1}}})));
    b.output(b.node("Gemm", {b.bn(b.input("xt", {8, 3}), 3), random_constant(b, {8, 5})},
                    attrs({{"transA", std::int64_t{1}}})));
    expect_unchanged(b);
  }
  {  // a shift before a padded conv: its border taps read zeros, not the shift
    GraphBuilder b(14);
    const std::string x = b.input("x", {1, 4, 6, 6});
    b.output(b.conv(b.bn(x, 4), 4, 4, 3, {.pads = testing::kPad1}));
    testing::expect_left_alone(b, passes::fold_conv_inputs);
  }
  {  // the BN read by a conv and by the residual Add (ConvMixer's blocks)
    GraphBuilder b(15);
    const std::string x = b.input("x", {1, 4, 6, 6});
    const std::string normed = b.bn(x, 4);
    b.output(b.add(normed, b.conv(normed, 4, 4, 1)));
    testing::expect_left_alone(b, passes::fold_conv_inputs);
  }
  {  // a conv and a product read one affine node: neither pass takes a mixed set
    GraphBuilder b(16);
    const std::string x = b.input("x", {1, 4, 1, 4});
    const std::string scaled = b.mul(x, random_constant(b, {4}));
    b.output(b.conv(scaled, 4, 4, 1));
    b.output(b.node("MatMul", {scaled, random_constant(b, {4, 3})}));
    expect_unchanged(b);
    testing::expect_left_alone(b, passes::fold_conv_inputs);
  }
  {  // products of two different values, and a product read by the sum and an output
    GraphBuilder b(11);
    const std::string x = b.input("x", {3, 8}), z = b.input("z", {3, 8});
    b.output(b.add(linear(b, x, 8, 5), linear(b, z, 8, 5)));
    const std::string shared = linear(b, x, 8, 5);
    b.output(b.add(shared, linear(b, x, 8, 5)));
    b.output(shared);
    expect_unchanged(b);
  }
}

}  // namespace
}  // namespace refold
