// graph::node_flops: the multiply-add work the profiler reports per node (GFLOP/s column).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/graph/profile.h"
#include "refold/tensor.h"

namespace refold::graph {
namespace {

Node node_of(std::string op_type, std::string domain = {}) {
  Node n;
  n.op_type = std::move(op_type);
  n.domain = std::move(domain);
  return n;
}

// 2·K per output element of every product: a MatMul, attention's ScaledMatMul (its scale and
// addend are not multiply-adds of the product), a Gemm with A transposed, a Linear along an axis;
// a Conv's 2·(C/g)·kh·kw; a recurrent layer's input and recurrent products.
TEST(NodeFlops, CountsTheProductsMultiplyAdds) {
  const Tensor q = zeros({2, 3, 16, 8}), k = zeros({2, 3, 8, 16}), s = zeros({2, 3, 16, 16});
  EXPECT_EQ(node_flops(node_of("MatMul"), {q, k}, {s}), 2 * 3 * 16 * 16 * 2 * 8);
  EXPECT_EQ(node_flops(node_of("ScaledMatMul", "refold"), {q, k}, {s}), 2 * 3 * 16 * 16 * 2 * 8);
  Node gemm = node_of("Gemm");
  gemm.attributes.set("transA", std::int64_t{1});
  EXPECT_EQ(node_flops(gemm, {zeros({5, 4}), zeros({5, 7})}, {zeros({4, 7})}), 4 * 7 * 2 * 5);
  EXPECT_EQ(node_flops(node_of("Conv"), {zeros({1, 8, 6, 6}), zeros({4, 2, 3, 3})},
                       {zeros({1, 4, 6, 6})}),
            4 * 6 * 6 * 2 * 2 * 3 * 3);
  // A Linear along axis 1 (AxisLinear, W [K = 3, N = 5]): 2·K per output element.
  EXPECT_EQ(node_flops(node_of("AxisLinear", "refold"), {zeros({2, 3, 7}), zeros({3, 5})},
                       {zeros({2, 5, 7})}),
            2 * 5 * 7 * 2 * 3);
  EXPECT_EQ(node_flops(node_of("AddSoftmax", "refold"), {s, s}, {s}), 0);
  // A bidirectional LSTM, X [T 5, B 2, I 6], W [2, 4·H, 6], R [2, 4·H, H], H 3: per step, entry
  // and direction 4·H gate rows of 2·(I + H).
  EXPECT_EQ(node_flops(node_of("LSTM"), {zeros({5, 2, 6}), zeros({2, 12, 6}), zeros({2, 12, 3})},
                       {zeros({5, 2, 2, 3})}),
            5 * 2 * 2 * 12 * 2 * (6 + 3));
}

}  // namespace
}  // namespace refold::graph
