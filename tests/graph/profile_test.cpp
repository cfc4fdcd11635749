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
// a Conv's 2·(C/g)·kh·kw.
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
}

}  // namespace
}  // namespace refold::graph
