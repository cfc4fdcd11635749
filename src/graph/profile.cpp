#include "refold/graph/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "core/check.h"
#include "core/checked_math.h"
#include "kernels/verbose.h"

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
  // W's dims past the first: (C/g)·k… for Conv, (M/g)·k… for ConvTranspose (1-d to 3-d).
  const std::int64_t per_element = w.size() >= 3 ? product(Shape(w.begin() + 1, w.end())) : 0;
  if (node.op_type == "Conv" && w.size() >= 3) {
    // out[n, m, y, x] = Σ_{c < C/g, i < kh, j < kw} …: 2·(C/g)·kh·kw per output element.
    return checked_mul(product(outputs[0].sizes()), 2 * per_element, "profile: Conv");
  }
  if (node.op_type == "ConvTranspose" && w.size() >= 3) {
    // Each input element scatters into (M/g)·kh·kw outputs: W is [C, M/g, kh, kw].
    return checked_mul(product(inputs[0].sizes()), 2 * per_element, "profile: ConvTranspose");
  }
  if (node.op_type == "Gemm" || node.op_type == "MatMul" || node.op_type == "ScaledMatMul") {
    // Y[M, N] = A[M, K]·B[K, N]: 2·K per output element, K = A's last dim (ScaledMatMul:
    // attention's scaled product, passes/scaled_matmul.h).
    const Shape& a = inputs[0].sizes();
    if (a.empty()) return 0;
    const std::int64_t k =
        node.attributes.get_int("transA", 0) != 0 && a.size() == 2 ? a[0] : a.back();
    return checked_mul(product(outputs[0].sizes()), 2 * k, "profile: Gemm");
  }
  const bool recurrent = node.op_type == "RNN" || node.op_type == "GRU" || node.op_type == "LSTM";
  if (recurrent && inputs.size() >= 3 && inputs[2].defined() && w.size() == 3 &&
      inputs[0].dim() == 3) {
    // Every step and direction: x_t·Wᵀ and H·Rᵀ over the G·H gate rows, W [D, G·H, I] and
    // R [D, G·H, H]: 2·(I + H) per gate row, batch entry, step and direction (the gates'
    // elementwise work not counted).
    const std::int64_t steps_by_batch = inputs[0].size(0) * inputs[0].size(1);
    return checked_mul(checked_mul(steps_by_batch, w[0] * w[1], "profile: recurrent"),
                       2 * (w[2] + inputs[2].size(2)), "profile: recurrent");
  }
  if (node.op_type == "AxisLinear" && w.size() == 2) {
    // A Linear along one axis (ops/axis_linear.h): 2·K per output element, W [K, N].
    return checked_mul(product(outputs[0].sizes()), 2 * w[0], "profile: AxisLinear");
  }
  return 0;
}

RunProfile profile(Graph& graph, const std::vector<Tensor>& inputs) {
  return profile([&](const Graph::NodeObserver& observe) { return graph.run(inputs, observe); });
}

namespace {

std::string layout_of(const std::vector<Tensor>& values) {
  if (values.empty() || !values[0].defined()) return "";
  const Tensor& t = values[0];
  if (t.dim() != 4) return fmt::format("{}-d", t.dim());
  return t.suggest_memory_format() == MemoryFormat::ChannelsLast ? "NHWC" : "NCHW";
}

std::int64_t bytes_of(const std::vector<Tensor>& values) {
  std::int64_t total = 0;
  for (const Tensor& t : values) {
    if (t.defined()) total += t.numel() * static_cast<std::int64_t>(t.element_size());
  }
  return total;
}

}  // namespace

RunProfile profile(const std::function<std::vector<Tensor>(const Graph::NodeObserver&)>& run) {
  using Clock = std::chrono::steady_clock;
  RunProfile result;
  DispatchLog dispatches;  // what each node's kernels chose, taken after each node
  auto last = Clock::now();
  result.outputs =
      run([&](const Node& node, const std::vector<Tensor>& read, const std::vector<Tensor>& wrote) {
        const auto now = Clock::now();
        NodeProfile p;
        p.name = node.name;
        p.op_type = node.op_type;
        p.flops = node_flops(node, read, wrote);
        p.milliseconds = std::chrono::duration<double, std::milli>(now - last).count();
        p.bytes = bytes_of(read) + bytes_of(wrote);
        p.layout_in = layout_of(read);
        p.layout_out = layout_of(wrote);
        p.implementations = dispatches.take();
        result.flops = checked_add(result.flops, p.flops, "profile: FLOP total");
        result.nodes.push_back(std::move(p));
        last = Clock::now();
      });
  return result;
}

std::vector<OpTypeProfile> by_op_type(const RunProfile& profile) {
  std::vector<OpTypeProfile> types;
  for (const NodeProfile& n : profile.nodes) {
    auto it = std::find_if(types.begin(), types.end(),
                           [&](const OpTypeProfile& t) { return t.op_type == n.op_type; });
    if (it == types.end()) it = types.insert(types.end(), OpTypeProfile{n.op_type});
    ++it->nodes;
    it->milliseconds += n.milliseconds;
    it->flops += n.flops;
    it->bytes += n.bytes;
  }
  std::stable_sort(types.begin(), types.end(), [](const OpTypeProfile& a, const OpTypeProfile& b) {
    return a.milliseconds > b.milliseconds;
  });
  return types;
}

RunProfile median_profile(const std::vector<RunProfile>& profiles) {
  REFOLD_CHECK(!profiles.empty(), "median_profile: no profiles");
  RunProfile result = profiles[0];
  std::vector<double> times(profiles.size());
  for (std::size_t i = 0; i < result.nodes.size(); ++i) {
    for (std::size_t k = 0; k < profiles.size(); ++k) {
      REFOLD_CHECK(profiles[k].nodes.size() == result.nodes.size() &&
                       profiles[k].nodes[i].name == result.nodes[i].name,
                   "median_profile: profile {} is of another graph", k);
      times[k] = profiles[k].nodes[i].milliseconds;
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    result.nodes[i].milliseconds = times[times.size() / 2];
  }
  return result;
}

}  // namespace refold::graph
