// MatMul with batch dims (the batched fast path against reference::matmul, broadcasting) and
// Einsum (src/ops/gemm.cpp): worked examples, the attention forms through the matmul fast path
// against reference::einsum, the general reference (diagonals, traces, sums, three inputs,
// ellipsis broadcast), channels_last inputs, and every error message. The ONNX backend tests
// test_matmul_* and test_einsum_* run in conformance.
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "kernels/reference/onnx_ops.h"
#include "onnx/ops_tensor_helpers.h"
#include "testing/builders.h"
#include "testing/compare.h"
#include "testing/error_table.h"

namespace refold::testing {
namespace gemm_ops {

using F32s = std::vector<float>;

Tensor einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < inputs.size(); ++i) names.push_back(fmt::format("x{}", i));
  OpCase c("Einsum", names);
  c.opset(12).text("equation", equation);
  return c.run(inputs);
}

Tensor reference_einsum(const std::string& equation, const std::vector<Tensor>& inputs) {
  return reference::einsum(reference::parse_einsum(equation, inputs.size()), inputs);
}

TEST(OnnxBatchedMatMul, BatchedFastPathBroadcastsLikeTheReference) {
  struct Case {
    Shape a, b;
  };
  for (const Case& c :
       {Case{{2, 3, 4}, {2, 4, 5}}, Case{{2, 1, 3, 4}, {5, 4, 6}}, Case{{3, 4}, {2, 4, 5}},
        Case{{1, 2, 3, 4}, {3, 1, 4, 2}}, Case{{4}, {2, 4, 3}}, Case{{2, 3, 4}, {4}}}) {
    const Tensor a = random(c.a, 1), b = random(c.b, 2);
    const Tensor y = OpCase("MatMul", {"a", "b"}).run({a, b});
    EXPECT_TRUE(all_close(y, reference::matmul(a, b), Tolerance::op_f32()))
        << fmt::format("[{}] x [{}]", fmt::join(c.a, ", "), fmt::join(c.b, ", "));
  }
  // A transposed (strided) B and a channels_last A read by logical index.
  const Tensor a = random({2, 3, 4, 5}, 3), b = random({2, 3, 6, 5}, 4).permute({0, 1, 3, 2});
  EXPECT_TRUE(all_close(OpCase("MatMul", {"a", "b"}).run({to_channels_last(a), b}),
                        reference::matmul(a, b), Tolerance::op_f32()));
}

TEST(OnnxEinsum, WorkedExamples) {
  const Tensor m = values({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(einsum("ij->ji", {m}).to_vector(), (F32s{1, 4, 2, 5, 3, 6}));
  EXPECT_EQ(einsum("ba", {m}).to_vector(), (F32s{1, 4, 2, 5, 3, 6}));  // implicit "ab"
  EXPECT_EQ(einsum("ij->i", {m}).to_vector(), (F32s{6, 15}));
  EXPECT_EQ(einsum("ij->", {m}).item(), 21);
  const Tensor sq = values({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(einsum("ii->i", {sq}).to_vector(), (F32s{1, 4}));
  EXPECT_EQ(einsum("ii", {sq}).item(), 5);  // the trace
  EXPECT_EQ(einsum("i,i", {values({1, 2, 3}, {3}), values({4, 5, 6}, {3})}).item(), 32);
  // [[1, 2], [3, 4]] · [[5, 6], [7, 8]] = [[19, 22], [43, 50]] (explicit and implicit output).
  const Tensor b = values({5, 6, 7, 8}, {2, 2});
  EXPECT_EQ(einsum("ij,jk->ik", {sq, b}).to_vector(), (F32s{19, 22, 43, 50}));
  EXPECT_EQ(einsum("ij, jk", {sq, b}).to_vector(), (F32s{19, 22, 43, 50}));
  // The outer product, and its transpose by the output's order.
  EXPECT_EQ(einsum("i,j->ji", {values({1, 2}, {2}), values({3, 4, 5}, {3})}).to_vector(),
            (F32s{3, 6, 4, 8, 5, 10}));
}

TEST(OnnxEinsum, AttentionFormsRunAsMatmulAndMatchTheReference) {
  struct Case {
    std::string equation;
    Shape a, b;
  };
  for (const Case& c :
       {Case{"bhid,bhjd->bhij", {2, 3, 4, 5}, {2, 3, 6, 5}},
        Case{"bhij,bhjd->bhid", {2, 3, 4, 6}, {2, 3, 6, 5}},
        Case{"bij,bjk->bik", {3, 4, 5}, {3, 5, 2}},
        Case{"bnqd,bnkd->bnqk", {1, 2, 7, 8}, {1, 2, 9, 8}},
        Case{"...id,...jd->...ij", {2, 3, 4, 5}, {2, 3, 6, 5}},
        Case{"...ij,...jk->...ik", {2, 1, 3, 4}, {5, 4, 6}},  // broadcast
        Case{"bchw,bkc->bkhw", {2, 3, 4, 5}, {2, 6, 3}}, Case{"ij,kj->ik", {4, 5}, {3, 5}}}) {
    const Tensor a = random(c.a, 5), b = random(c.b, 6);
    const Tensor expected = reference_einsum(c.equation, {a, b});
    EXPECT_TRUE(all_close(einsum(c.equation, {a, b}), expected, Tolerance::op_f32())) << c.equation;
    if (c.a.size() == 4) {
      EXPECT_TRUE(
          all_close(einsum(c.equation, {to_channels_last(a), b}), expected, Tolerance::op_f32()))
          << c.equation << " (channels_last)";
    }
  }
  // The reference against matmul itself: bhid,bhjd->bhij = A · Bᵀ.
  const Tensor a = random({2, 3, 4, 5}, 7), b = random({2, 3, 6, 5}, 8);
  EXPECT_TRUE(all_close(reference_einsum("bhid,bhjd->bhij", {a, b}),
                        reference::matmul(a, b.permute({0, 1, 3, 2})), Tolerance::op_f32()));
}

TEST(OnnxEinsum, GeneralContractionsMatchAHandWrittenSum) {
  // ij,jk,kl->il over three inputs = (A · B) · C.
  const Tensor a = random({2, 3}, 9), b = random({3, 4}, 10), c = random({4, 2}, 11);
  EXPECT_TRUE(all_close(einsum("ij,jk,kl->il", {a, b, c}),
                        reference::matmul(reference::matmul(a, b), c), Tolerance::op_f32()));
  // Batch diagonal "...ii->...i" and a transpose "nchw->nhwc" on channels_last input.
  const Tensor x = random({2, 3, 3, 3}, 12);
  const Tensor d = einsum("...ii->...i", {x});
  EXPECT_EQ(d.sizes(), (Shape{2, 3, 3}));
  EXPECT_FLOAT_EQ(d.at({1, 2, 1}), x.at({1, 2, 1, 1}));
  const Tensor t = einsum("nchw->nhwc", {to_channels_last(x)});
  EXPECT_TRUE(all_close(t, x.permute({0, 2, 3, 1}), Tolerance::exact()));
  // A label summed over one input only: "ij,j->" = Σ_ij a_ij · v_j.
  const Tensor v = random({3}, 13);
  double sum = 0;
  for (std::int64_t i = 0; i < 2; ++i)
    for (std::int64_t j = 0; j < 3; ++j) sum += double(a.at({i, j})) * v.at({j});
  EXPECT_NEAR(einsum("ij,j->", {a, v}).item(), sum, 1e-5);
}

TEST(OnnxEinsum, Errors) {
  const Tensor m = zeros({2, 3});
  expect_errors({
      {"no equation", [] { OpCase("Einsum", {"x"}).opset(12).module(); },
       "the equation attribute is required"},
      {"character", [] { OpCase("Einsum", {"x"}).opset(12).text("equation", "i1->i").module(); },
       "Einsum: equation 'i1->i': unexpected character '1' in term 'i1'"},
      {"terms", [] { OpCase("Einsum", {"x"}).opset(12).text("equation", "ij,jk->ik").module(); },
       "Einsum: equation 'ij,jk->ik' has 2 input terms for 1 inputs"},
      {"output label", [] { OpCase("Einsum", {"x"}).opset(12).text("equation", "ij->k").module(); },
       "Einsum: equation 'ij->k': output label 'k' is in no input"},
      {"repeated output",
       [] { OpCase("Einsum", {"x"}).opset(12).text("equation", "ij->ii").module(); },
       "label 'i' appears twice in the output"},
      {"two ellipses",
       [] { OpCase("Einsum", {"x"}).opset(12).text("equation", "...i...->i").module(); },
       "term '...i...' has more than one '...'"},
      {"two arrows", [] { OpCase("Einsum", {"x"}).opset(12).text("equation", "i->i->i").module(); },
       "has more than one '->'"},
      {"rank", [&] { einsum("ijk->i", {m}); },
       "Einsum: input 0 has rank 2 but its term 'ijk' names 3 dimensions"},
      {"sizes",
       [&] {
         einsum("ij,ij->i", {m, zeros({2, 4})});
       },
       "Einsum: label 'j' has size 4 in input 1 [2, 4] but 3 elsewhere"},
      {"ellipsis kept", [&] { einsum("...j->j", {m}); },
       "Einsum: the output must keep '...' (it stands for 1 dimensions)"},
      {"broadcast",
       [&] {
         einsum("...i,...i->...i", {zeros({2, 3}), zeros({4, 3})});
       },
       "the '...' dimensions of input 1 [4, 3] do not broadcast"},
      {"dtype",
       [] {
         einsum("i->i", {testing::i64({1, 2})});
       },
       "Einsum: input 0 has dtype int64; the inputs must be float32 or bfloat16"},
  });
}

}  // namespace gemm_ops
}  // namespace refold::testing
