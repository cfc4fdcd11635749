#include "refold/graph/profile.h"

#include <chrono>

#include "core/checked_math.h"

namespace refold::graph {

namespace {

// Σ-free product of sizes, overflow-checked.
std::int64_t product(const Shape& sizes) {
  std::int64_t p = 1;
  for (std::int64_t s : sizes) p = checked_mul(p, s, "profile: FLOP count");
  return p;
}

}  // namespace

std::int64_t node_flops(const Node& node, const std::vector<Tensor>& inputs,
                        const std::vector<Tensor>& outputs) {
  if (inputs.size() < 2 || outputs.empty() || !inputs[0].defined() || !inputs[1].defined() ||
      !outputs[0].defined()) {
    return 0;
  }
  const Shape& w = inputs[1].sizes();
  if (node.op_type == "Conv" && w.size() == 4) {
    // out[n, m, y, x] = Σ_{c < C/g, i < kh, j < kw} …: 2·(C/g)·kh·kw per output element.
    return checked_mul(product(outputs[0].sizes()), 2 * w[1] * w[2] * w[3], "profile: Conv");
  }
  if (node.op_type == "ConvTranspose" && w.size() == 4) {
    // Each input element scatters into (M/g)·kh·kw outputs: W is [C, M/g, kh, kw].
    return checked_mul(product(inputs[0].sizes()), 2 * w[1] * w[2] * w[3],
                       "profile: ConvTranspose");
  }
  if (node.op_type == "Gemm" || node.op_type == "MatMul") {
    // Y[M, N] = A[M, K]·B[K, N]: 2·K per output element, K = A's last dim.
    const Shape& a = inputs[0].sizes();
    if (a.empty()) return 0;
    const std::int64_t k =
        node.attributes.get_int("transA", 0) != 0 && a.size() == 2 ? a[0] : a.back();
    return checked_mul(product(outputs[0].sizes()), 2 * k, "profile: Gemm");
  }
  return 0;
}

RunProfile profile(Graph& graph, const std::vector<Tensor>& inputs) {
  return profile([&](const Graph::NodeObserver& observe) { return graph.run(inputs, observe); });
}

RunProfile profile(const std::function<std::vector<Tensor>(const Graph::NodeObserver&)>& run) {
  using Clock = std::chrono::steady_clock;
  RunProfile result;
  auto last = Clock::now();
  result.outputs =
      run([&](const Node& node, const std::vector<Tensor>& read, const std::vector<Tensor>& wrote) {
        const auto now = Clock::now();
        NodeProfile p{node.name, node.op_type, node_flops(node, read, wrote),
                      std::chrono::duration<double, std::milli>(now - last).count()};
        result.flops = checked_add(result.flops, p.flops, "profile: FLOP total");
        result.nodes.push_back(std::move(p));
        last = Clock::now();
      });
  return result;
}

}  // namespace refold::graph
