// simplify: Add/Sub of zeros, Mul/Div by ones, inference Dropout, identity and cancelling
// Transposes, zero Pads become Identity nodes (dead-code removes them), Reshape pairs merge —
// bit-identically; the traps (a broadcast that enlarges x, another dtype, a constant that is
// almost neutral, a graph output, …) stay as they are, with a note.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ops/op.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/passes/pipeline.h"
#include "testing/compare.h"
#include "testing/graph_builder.h"
#include "testing/pass_checks.h"

namespace refold {
namespace {

using testing::apply_pass;
using testing::attrs;
using testing::expect_left_alone;
using testing::GraphBuilder;
using testing::has_note;
using testing::int64s;
using testing::notes_of;

// The pass on a graph it rewrites: bit-identical outputs.
passes::PassReport simplify_exactly(GraphBuilder& b) {
  return apply_pass(b, passes::simplify_algebra, /*exact=*/true);
}

// Then dead-code, as the pipeline runs it next: the Identity nodes go, the values stay.
void remove_identities(GraphBuilder& b) {
  const passes::PassReport r = apply_pass(b, passes::eliminate_dead_code, /*exact=*/true);
  EXPECT_EQ(b.count("Identity"), 0) << notes_of(r) << b.graph().dump();
}

std::vector<std::int64_t> perm(std::vector<std::int64_t> p) { return p; }

TEST(Simplify, AddOfZerosBecomesIdentity) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 3, 4, 5});
  // x + 0 with a per-channel zero [3, 1, 1], 0 + x with a scalar.
  const std::string a = b.add(x, b.constant("zeros", zeros({3, 1, 1})));
  const std::string c = b.add(b.constant("zero", zeros({})), b.relu(a));
  b.output(b.sigmoid(c));
  EXPECT_EQ(b.count("Add"), 2);
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(b.count("Add"), 0) << b.graph().dump();
  EXPECT_EQ(b.count("Identity"), 2);
  EXPECT_TRUE(has_note(r, "simplified Add 'Add_1' (x + 0) → Identity of 'x'")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "simplified Add 'Add_2' (0 + x)")) << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();  // Relu, Sigmoid
  EXPECT_TRUE(b.graph().constant_names().empty());
}

TEST(Simplify, SubZeroMulOneDivOneBecomeIdentity) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 3, 3});
  std::string h = b.node("Sub", {x, b.constant("zero", zeros({4, 1, 1}))});
  h = b.mul(h, b.constant("one", ones({1, 4, 1, 1})));
  h = b.mul(b.constant("one", ones({3})), h);
  h = b.node("Div", {h, b.constant("one", ones({}))});
  b.output(b.relu(h));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(b.count("Sub") + b.count("Mul") + b.count("Div"), 0) << b.graph().dump();
  EXPECT_EQ(b.count("Identity"), 4);
  EXPECT_TRUE(has_note(r, "(x - 0)")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "(x * 1)")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "(1 * x)")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "(x / 1)")) << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
}

// Sub(0, x) and Div(1, x) are not no-ops.
TEST(Simplify, ZeroMinusXAndOneOverXStay) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 3});
  const std::string s = b.node("Sub", {b.constant("zero", zeros({})), x});
  b.output(b.node("Div", {b.constant("one", ones({})), s}));
  expect_left_alone(b, passes::simplify_algebra);
}

// x's shape known from the Conv that writes it (4-d output, 8 channels): a [8, 1, 1] zero fits.
TEST(Simplify, ConvOutputRankAndChannelsAreKnown) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 3, 6, 6});
  const std::string c = b.conv(x, 3, 8, 3);
  b.output(b.relu(b.add(c, b.constant("zeros", zeros({8, 1, 1})))));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(r.changed) << notes_of(r);
  EXPECT_EQ(b.count("Add"), 0);
}

// The conv's output spatial size is not known here, so a [8, 4, 4] zero might enlarge it.
TEST(Simplify, ZerosOverUnknownDimsStay) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 3, 6, 6});
  const std::string c = b.conv(x, 3, 8, 3);
  b.output(b.add(b.relu(c), b.constant("zeros", zeros({8, 4, 4}))));
  const passes::PassReport r = expect_left_alone(b, passes::simplify_algebra);
  EXPECT_TRUE(has_note(r, "kept Add 'Add_1': the constant of shape [8, 4, 4] could broadcast"))
      << notes_of(r);
}

// x [4] + zeros [2, 4] is [2, 4]; x [3, 1] + zeros [3, 5] is [3, 5]: the Add is not a no-op.
TEST(Simplify, ZerosThatBroadcastToALargerShapeStay) {
  GraphBuilder b;
  const std::string x = b.input("x", {4});
  const std::string y = b.input("y", {3, 1});
  b.output(b.add(x, b.constant("zeros", zeros({2, 4}))));
  b.output(b.mul(b.constant("ones", ones({3, 5})), y));
  const passes::PassReport r = expect_left_alone(b, passes::simplify_algebra);
  EXPECT_TRUE(has_note(r,
                       "kept Add 'Add_1': the constant of shape [2, 4] broadcasts 'x' of "
                       "shape [4] to a higher rank"))
      << notes_of(r);
  EXPECT_TRUE(has_note(r,
                       "kept Mul 'Mul_1': the constant of shape [3, 5] could broadcast 'y' of "
                       "shape [3, 1] to a larger shape"))
      << notes_of(r);
  EXPECT_EQ(b.run(b.random_inputs())[0].sizes(), (Shape{2, 4}));
}

// A value declared with a dtype but no shape: a scalar zero cannot enlarge it, a [4] might.
TEST(Simplify, UnknownRankTakesOnlyAScalar) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  const std::string s = b.node("Softmax", {x}, attrs({{"axis", std::int64_t{1}}}));
  b.graph().value_info.push_back({s, 1, std::nullopt});
  const std::string scalar = b.add(s, b.constant("zero", zeros({})));
  b.output(b.add(scalar, b.constant("zeros", zeros({4}))));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(has_note(r, "simplified Add 'Add_1'")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "kept Add 'Add_2': the rank of")) << notes_of(r);
  EXPECT_EQ(b.count("Add"), 1);
}

// A Softmax output with nothing declared: its dtype is unknown, so even a scalar zero stays.
TEST(Simplify, UnknownDtypeStays) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  const std::string s = b.node("Softmax", {x}, attrs({{"axis", std::int64_t{1}}}));
  b.output(b.add(s, b.constant("zero", zeros({}))));
  const passes::PassReport r = expect_left_alone(b, passes::simplify_algebra);
  EXPECT_TRUE(has_note(r, "the dtype of 'Softmax_1_out' is not known")) << notes_of(r);
}

// Float x plus an int64 zero is an error at run time (refold's Add takes one dtype), which an
// Identity would hide; so the node stays. The graph cannot run, so the pass runs alone.
TEST(Simplify, ZeroOfAnotherDtypeStays) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  b.output(b.relu(b.add(x, b.constant("zero", zeros({}, DType::Int64)))));
  b.output(b.relu(b.mul(x, b.constant("one", ones({4}, DType::BFloat16)))));
  const passes::PassReport r = passes::simplify_algebra(b.graph());
  EXPECT_FALSE(r.changed);
  EXPECT_EQ(b.count("Add"), 1);
  EXPECT_EQ(b.count("Mul"), 1);
  EXPECT_TRUE(has_note(r, "kept Add 'Add_1': 'x' is float32 but the constant is int64"))
      << notes_of(r);
  EXPECT_TRUE(has_note(r, "kept Mul 'Mul_1': 'x' is float32 but the constant is bfloat16"))
      << notes_of(r);
}

// int64 arithmetic: x + 0 and x · 1 are exact too.
TEST(Simplify, Int64ArithmeticSimplifies) {
  GraphBuilder b;
  const std::string x = b.input("x", {3});
  b.graph().inputs[0].elem_type = 7;
  const std::string i = b.node("Add", {x, b.constant("zero", zeros({3}, DType::Int64))});
  b.output(b.node("Mul", {i, b.constant("one", ones({1}, DType::Int64))}));
  const passes::PassReport r = passes::simplify_algebra(b.graph());
  EXPECT_TRUE(r.changed) << notes_of(r);
  EXPECT_EQ(b.count("Add"), 0);
  EXPECT_TRUE(has_note(r, "kept Mul 'Mul_1' (x * 1): its output 'Mul_1_out' is a graph output"))
      << notes_of(r);
  const Tensor in = int64s({-7, 0, 9});
  const Tensor out = b.graph().run({in})[0];
  EXPECT_EQ(out.dtype(), DType::Int64);
  EXPECT_EQ(out.to_vector(), (std::vector<float>{-7, 0, 9}));
}

// Almost neutral is not neutral: x + 1e-30 and x · (1 + 2⁻²³) stay.
TEST(Simplify, AlmostNeutralConstantsStay) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  const std::string a = b.add(x, b.constant("tiny", full({}, 1e-30f)));
  b.output(b.mul(a, b.constant("almost_one", full({4}, 1.0f + 1.0f / 8388608.0f))));
  const passes::PassReport r = expect_left_alone(b, passes::simplify_algebra);
  EXPECT_TRUE(r.notes.empty()) << notes_of(r);  // not candidates at all
}

// A zero that is the output of a Constant node (before constant folding has run).
TEST(Simplify, ZeroFromAConstantNode) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  const std::string zero = b.node("Constant", {}, attrs({{"value", zeros({4})}}));
  b.output(b.relu(b.add(x, zero)));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(r.changed) << notes_of(r);
  EXPECT_EQ(b.count("Add"), 0);
  remove_identities(b);
  EXPECT_EQ(b.count("Constant"), 0) << b.graph().dump();
}

// A no-op writing a graph output stays: dead-code would keep its Identity anyway.
TEST(Simplify, NoOpWritingAGraphOutputStays) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  b.output(b.add(b.relu(x), b.constant("zero", zeros({}))));
  const passes::PassReport r = expect_left_alone(b, passes::simplify_algebra);
  EXPECT_TRUE(has_note(r, "kept Add 'Add_1' (x + 0): its output 'Add_1_out' is a graph output"))
      << notes_of(r);
}

// The model's own Identity nodes are dead-code's work.
TEST(Simplify, LeavesIdentityNodesToDeadCode) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  b.output(b.relu(b.identity(x)));
  expect_left_alone(b, passes::simplify_algebra);
}

// A Dropout node with `training_mode` (or none) and optionally a mask output.
std::string dropout(GraphBuilder& b, const std::string& x, const std::string& training,
                    bool with_mask, const std::string& name) {
  graph::Node n;
  n.name = name;
  n.op_type = "Dropout";
  n.inputs = {x};
  if (!training.empty()) n.inputs = {x, b.constant("ratio", full({}, 0.5f)), training};
  n.outputs = {name + "_out"};
  if (with_mask) n.outputs.push_back(name + "_mask");
  n.module = ops::build_module({n, b.graph(), 17});
  b.graph().add_node(std::move(n));
  return name + "_out";
}

TEST(Simplify, InferenceDropoutBecomesIdentity) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  const std::string d1 = dropout(b, x, "", false, "plain");
  // training_mode a constant false; the mask output named but read by nothing.
  const std::string d2 =
      dropout(b, b.relu(d1), b.constant("training", zeros({}, DType::Int64)), true, "masked");
  b.output(b.relu(d2));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(r.changed);
  EXPECT_EQ(b.count("Dropout"), 0);
  EXPECT_TRUE(has_note(r, "simplified Dropout 'plain' (inference Dropout)")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "simplified Dropout 'masked'")) << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.graph().nodes().size(), 2u) << b.graph().dump();
}

// training_mode true: the importer refuses a constant one; one computed at run time might be
// true, so that Dropout stays; so does one whose mask is used.
TEST(Simplify, TrainingDropoutAndUsedMaskStay) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4});
  EXPECT_THROW(dropout(b, x, b.constant("training", ones({}, DType::Int64)), false, "refused"),
               Error);
  const std::string flag = b.input("train_flag", {});
  b.output(b.relu(dropout(b, x, flag, false, "runtime")));
  b.output(dropout(b, b.relu(x), "", true, "mask_used"));
  b.graph().outputs.push_back({"mask_used_mask", 7, std::nullopt});
  const passes::PassReport r = passes::simplify_algebra(b.graph());  // `training` has no value
  EXPECT_FALSE(r.changed) << notes_of(r);
  EXPECT_EQ(b.count("Dropout"), 2);
  EXPECT_TRUE(has_note(r,
                       "kept Dropout 'runtime': its training_mode 'train_flag' is computed at "
                       "run time"))
      << notes_of(r);
  EXPECT_TRUE(has_note(r, "kept Dropout 'mask_used': its mask output 'mask_used_mask' is used"))
      << notes_of(r);
}

TEST(Simplify, TransposeByTheIdentityBecomesIdentity) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 3, 4});
  const std::string t = b.node("Transpose", {x}, attrs({{"perm", perm({0, 1, 2})}}));
  b.output(b.relu(t));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(has_note(r, "simplified Transpose 'Transpose_1' (Transpose by the identity)"))
      << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.count("Transpose"), 0);
}

// NCHW → NHWC → NCHW cancels; the inner Transpose stays while another node reads it. A 2-d
// Transpose without perm (a reversal) twice cancels too, its rank being known.
TEST(Simplify, TransposePairsThatCancelGo) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 2, 3, 4});
  const std::string nhwc = b.node("Transpose", {x}, attrs({{"perm", perm({0, 2, 3, 1})}}));
  const std::string back = b.node("Transpose", {nhwc}, attrs({{"perm", perm({0, 3, 1, 2})}}));
  b.output(b.relu(back));
  b.output(b.sigmoid(nhwc));
  const std::string m = b.input("m", {3, 5});
  b.output(b.relu(b.node("Transpose", {b.node("Transpose", {m})})));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(has_note(r, "simplified Transpose 'Transpose_2' (undoes Transpose 'Transpose_1')"))
      << notes_of(r);
  EXPECT_TRUE(has_note(r, "simplified Transpose 'Transpose_4' (undoes Transpose 'Transpose_3')"))
      << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.count("Transpose"), 1) << b.graph().dump();  // the NHWC one the Sigmoid reads
  EXPECT_EQ(b.graph().nodes()[0].inputs, std::vector<std::string>{x});
}

TEST(Simplify, TransposePairsThatDoNotCancelStay) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 2, 3, 4});
  // Twice NCHW → NHWC: [0, 3, 1, 2] ∘ … is not the identity.
  const std::string t1 = b.node("Transpose", {x}, attrs({{"perm", perm({0, 2, 3, 1})}}));
  b.output(b.node("Transpose", {t1}, attrs({{"perm", perm({0, 2, 3, 1})}})));
  const passes::PassReport r = expect_left_alone(b, passes::simplify_algebra);
  EXPECT_TRUE(has_note(r,
                       "kept Transpose 'Transpose_2': the pair with Transpose 'Transpose_1' "
                       "permutes by [0, 3, 1, 2], not the identity"))
      << notes_of(r);
}

// Reshape(Reshape(x, [6, 4]), [2, -1, 4]) = Reshape(x, [2, -1, 4]); the inner one goes.
TEST(Simplify, ReshapePairsMerge) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 2, 3, 4});
  const std::string r1 = b.node("Reshape", {x, b.constant("s1", int64s({6, 4}))});
  const std::string r2 = b.node("Reshape", {r1, b.constant("s2", int64s({2, -1, 4}))});
  b.output(b.relu(r2));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(has_note(r,
                       "simplified Reshape 'Reshape_2' (merged with Reshape 'Reshape_1') now "
                       "reads 'x'"))
      << notes_of(r);
  // The inner Reshape, read by nothing else, went with the rewrite.
  EXPECT_EQ(b.count("Reshape"), 1);
  EXPECT_EQ(b.graph().nodes()[0].inputs[0], x);
  EXPECT_EQ(b.run(b.random_inputs())[0].sizes(), (Shape{2, 3, 4}));
}

// A 0 in the outer shape copies a dim of the inner Reshape's output: it stays.
TEST(Simplify, ReshapeCopyingADimStays) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 2, 3, 4});
  const std::string r1 = b.node("Reshape", {x, b.constant("s1", int64s({6, 4}))});
  b.output(b.node("Reshape", {r1, b.constant("s2", int64s({0, 2, 2}))}));
  const passes::PassReport r = expect_left_alone(b, passes::simplify_algebra);
  EXPECT_TRUE(has_note(r,
                       "kept Reshape 'Reshape_2': the pair with Reshape 'Reshape_1': its shape "
                       "'s2' copies a dim (0)"))
      << notes_of(r);
}

TEST(Simplify, ZeroPadBecomesIdentityOtherPadsStay) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 2, 3, 3});
  const std::string p0 = b.node("Pad", {x, b.constant("pads", int64s({0, 0, 0, 0, 0, 0, 0, 0}))});
  const std::string p1 = b.node("Pad", {p0, b.constant("pads", int64s({0, 0, 1, 1, 0, 0, 1, 1}))});
  b.output(b.relu(p1));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(has_note(r, "simplified Pad 'Pad_1' (Pad by zeros)")) << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.count("Pad"), 1);
}

// GhostNet's cat(x1, x2)[:, :oup] with oup = the channels of the cat: every element kept. A
// Slice that drops one, one with step 2 over a dim of 1, and a reversal (the same shape) stay
// or go as the rule says; so does a Slice over a dim of unknown size.
TEST(Simplify, SliceOfEveryElementBecomesIdentity) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 3, 1});
  auto slice = [&](const std::string& in, std::vector<std::int64_t> starts,
                   std::vector<std::int64_t> ends, std::vector<std::int64_t> axes,
                   std::vector<std::int64_t> steps) {
    return b.node("Slice",
                  {in, b.constant("starts", int64s(starts)), b.constant("ends", int64s(ends)),
                   b.constant("axes", int64s(axes)), b.constant("steps", int64s(steps))});
  };
  const std::string all = slice(x, {0}, {4}, {1}, {1});                    // goes
  const std::string huge = slice(all, {0, -9}, {99, 99}, {1, 2}, {1, 1});  // goes
  const std::string one = slice(huge, {0}, {5}, {3}, {2});                 // a dim of 1: goes
  const std::string fewer = slice(one, {1}, {4}, {1}, {1});                // stays
  const std::string reversed = slice(fewer, {-1}, {-99}, {2}, {-1});       // stays
  b.output(b.relu(reversed));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(has_note(r, "(Slice to the input's own shape)")) << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.count("Slice"), 2);
}

// EfficientViT's feat.view(B, -1, H, W) of a conv's [B, C, H, W] output, and the other ops
// that keep the row-major order: to the input's own shape they go, to any other they stay.
TEST(Simplify, ReshapeToTheInputsOwnShapeBecomesIdentity) {
  GraphBuilder b;
  const std::string x = b.input("x", {2, 4, 3, 3});
  const std::string same = b.node("Reshape", {x, b.constant("s1", int64s({2, -1, 3, 3}))});
  const std::string zeros_copy = b.node("Reshape", {same, b.constant("s2", int64s({0, 0, 3, 3}))});
  const std::string flat = b.node("Reshape", {zeros_copy, b.constant("s3", int64s({2, 4, 9}))});
  const std::string squeezed = b.node("Squeeze", {flat});  // no dim of 1: the same shape
  const std::string expanded = b.node("Expand", {squeezed, b.constant("e", int64s({2, 4, 9}))});
  const std::string wider = b.node("Expand", {expanded, b.constant("e2", int64s({3, 2, 4, 9}))});
  b.output(b.relu(wider));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(has_note(r, "simplified Reshape 'Reshape_1' (Reshape to the input's own shape)"))
      << notes_of(r);
  EXPECT_TRUE(has_note(r, "(Squeeze to the input's own shape)")) << notes_of(r);
  EXPECT_TRUE(has_note(r, "(Expand to the input's own shape)")) << notes_of(r);
  remove_identities(b);
  EXPECT_EQ(b.count("Reshape"), 1);  // the one to [2, 4, 9]
  EXPECT_EQ(b.count("Squeeze"), 0);
  EXPECT_EQ(b.count("Expand"), 1);  // the one that adds a dim
}

TEST(Simplify, SliceOverAnUnknownSizeStays) {
  GraphBuilder b;
  graph::ValueInfo v;
  v.name = "x";
  v.shape = std::vector<graph::Dim>{{1, ""}, {4, ""}, {-1, "H"}, {3, ""}};
  b.graph().inputs.push_back(v);
  b.output(b.node("Slice", {"x", b.constant("starts", int64s({0})), b.constant("ends", int64s({4})),
                            b.constant("axes", int64s({1}))}));
  const passes::PassReport r = passes::simplify_algebra(b.graph());
  EXPECT_FALSE(r.changed) << notes_of(r);
}

// A second run finds nothing left to do.
TEST(Simplify, IsIdempotent) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 2, 3, 3});
  b.output(b.relu(b.mul(b.add(x, b.constant("zero", zeros({}))), b.constant("one", ones({1})))));
  EXPECT_TRUE(passes::simplify_algebra(b.graph()).changed);
  passes::eliminate_dead_code(b.graph());
  const std::string once = b.graph().dump();
  EXPECT_FALSE(passes::simplify_algebra(b.graph()).changed);
  EXPECT_EQ(b.graph().dump(), once);
}

// Conv → `no_op` (Add of zeros or Mul by ones, [1, 4, 1, 1]) → BatchNormalization.
GraphBuilder conv_no_op_bn(const std::string& no_op) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 3, 8, 8});
  const std::string c = b.conv(x, 3, 4, 3, {.pads = testing::kPad1});
  const std::string k = b.constant("k", no_op == "Add" ? zeros({1, 4, 1, 1}) : ones({1, 4, 1, 1}));
  b.output(b.bn(b.node(no_op, {c, k}), 4));
  return b;
}

// The point of the pass: Conv → Add(0) → BatchNormalization becomes one Conv under optimize,
// the Add removed by simplify and dead-code, the BN folded by bn-folding.
TEST(SimplifyPipeline, NoOpBetweenConvAndBatchNormNoLongerBlocksFolding) {
  for (const std::string op : {"Add", "Mul"}) {
    SCOPED_TRACE(op);
    GraphBuilder b = conv_no_op_bn(op);
    Generator gen(3);
    const Tensor in = randn({1, 3, 8, 8}, {}, gen);
    const Tensor expected = b.run({in})[0];
    const passes::PipelineReport report = passes::optimize(b.graph());
    b.graph().verify();
    EXPECT_TRUE(testing::model_close(b.run({in})[0], expected));
    EXPECT_EQ(b.graph().nodes().size(), 1u) << b.graph().dump();
    EXPECT_EQ(b.count("Conv"), 1) << b.graph().dump();
    const std::string line = report.to_string();
    EXPECT_NE(line.find(op + " 1 → 0"), std::string::npos) << line;
    EXPECT_NE(line.find("BatchNormalization 1 → 0"), std::string::npos) << line;
    for (const passes::PassReport& p : report.passes) {
      if (p.pass == "simplify") {
        EXPECT_TRUE(has_note(p, "simplified " + op)) << notes_of(p);
      }
      if (p.pass == "bn-folding") {
        EXPECT_TRUE(has_note(p, "folded BatchNormalization")) << notes_of(p);
      }
    }
  }
}

// bn-folding alone (reparameterize off: it merges such Add/Mul chains on its own) folds the BN
// only when simplify has removed the no-op in front of it.
TEST(SimplifyPipeline, BnFoldingNeedsSimplifyWithoutReparameterize) {
  for (const std::string op : {"Add", "Mul"}) {
    SCOPED_TRACE(op);
    for (const bool simplify : {true, false}) {
      GraphBuilder b = conv_no_op_bn(op);
      passes::PipelineOptions options;
      // activation-fusion would take what bn-folding leaves (as conv post-op steps).
      options.disabled = {"reparameterize", "activation-fusion"};
      if (!simplify) options.disabled.insert("simplify");
      apply_pass(b, [&](graph::Graph& g) {
        passes::optimize(g, options);
        return passes::PassReport{};
      });
      EXPECT_EQ(b.count("BatchNormalization"), simplify ? 0 : 1) << b.graph().dump();
      EXPECT_EQ(b.count(op), simplify ? 0 : 1) << b.graph().dump();
      EXPECT_EQ(b.count("Conv"), 1) << b.graph().dump();
    }
  }
}

// F.normalize as exported: x / ReduceL2(x).expand_as(x). The Div broadcasts the norm itself;
// the Expand goes. An Expand whose shape the op would not reach by itself stays.
TEST(Simplify, AnOpReadsWhatItsExpandedOperandExpands) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 6, 32});
  const std::string norm = b.node("ReduceL2", {x}, attrs({{"axes", std::vector<std::int64_t>{-1}}}),
                                  "norm");  // keepdims: [1, 4, 6, 1]
  const std::string shape = b.constant("shape", int64s({1, 4, 6, 32}));
  const std::string e = b.node("Expand", {norm, shape}, {}, "expand");
  const std::string y = b.node("Div", {x, e}, {}, "div");
  // Mul(expanded, [1, 1, 1, 1]): without the Expand the product would be [1, 4, 6, 1].
  const std::string one = b.constant("one", full({1, 1, 1, 1}, 2.f));
  b.output(b.node("Add", {y, b.node("Mul", {e, one}, {}, "scaled")}, {}, "sum"));
  const passes::PassReport r = simplify_exactly(b);
  EXPECT_TRUE(r.changed);
  EXPECT_TRUE(has_note(r,
                       "simplified Div 'div' (the op broadcasts the Expand's input itself) "
                       "now reads 'norm"))
      << notes_of(r);
  EXPECT_FALSE(has_note(r, "Mul 'scaled'")) << notes_of(r);
  for (const graph::Node& n : b.graph().nodes()) {
    if (n.name == "div") {
      EXPECT_EQ(n.inputs[1], norm);
    }
    if (n.name == "scaled") {
      EXPECT_EQ(n.inputs[0], e);
    }
  }
  EXPECT_EQ(b.count("Expand"), 1);
}

// An Expand the rewrite leaves unread goes in the same pass, so that the patterns of the next
// pass (canonicalize's L2Normalize) find the norm read by the Div alone.
TEST(Simplify, AnExpandNothingElseReadsGoesWithTheRewrite) {
  GraphBuilder b;
  const std::string x = b.input("x", {1, 4, 6, 32});
  const std::string norm =
      b.node("ReduceL2", {x}, attrs({{"axes", std::vector<std::int64_t>{-1}}}), "norm");
  const std::string shape = b.constant("shape", int64s({1, 4, 6, 32}));
  b.output(b.node("Div", {x, b.node("Expand", {norm, shape}, {}, "expand")}, {}, "div"));
  EXPECT_TRUE(simplify_exactly(b).changed);
  EXPECT_EQ(b.count("Expand"), 0) << b.graph().dump();
  ASSERT_EQ(b.graph().consumers(norm).size(), 1u);
  EXPECT_EQ(b.graph().nodes()[b.graph().consumers(norm)[0]].name, "div");
}

}  // namespace
}  // namespace refold
