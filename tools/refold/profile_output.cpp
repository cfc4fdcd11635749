#include "profile_output.h"

#include <fmt/format.h>

#include <map>
#include <vector>

namespace refold::cli {

namespace {

double total_ms(const graph::RunProfile& p) {
  double t = 0;
  for (const graph::NodeProfile& n : p.nodes) t += n.milliseconds;
  return t;
}

// GFLOP/s and GB/s from a count over milliseconds (0 when no time was measured).
double per_ns(std::int64_t count, double ms) { return ms > 0 ? count / (ms * 1e6) : 0; }

// "conv2d: winograd ×16, conv2d: onednn brg:avx2 ×2", most frequent first.
std::string implementations_of(const graph::RunProfile& p, const std::string& op_type) {
  std::map<std::string, int> counts;
  for (const graph::NodeProfile& n : p.nodes) {
    if (n.op_type != op_type) continue;
    for (const std::string& impl : n.implementations) ++counts[impl];
  }
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [impl, count] : sorted) {
    if (!text.empty()) text += ", ";
    text += count == 1 ? impl : fmt::format("{} ×{}", impl, count);
  }
  return text.empty() ? "-" : text;
}

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const std::string& s : items) text += (text.empty() ? "" : ", ") + s;
  return text.empty() ? "-" : text;
}

}  // namespace

void print_profile(std::FILE* out, const std::string& title, const graph::RunProfile& profile) {
  const double total = total_ms(profile);
  fmt::print(out, "\n{}: {:.3f} ms in {} nodes\n", title, total, profile.nodes.size());
  fmt::print(out, "{:<22} {:>5} {:>9} {:>6} {:>8} {:>7}  {}\n", "op type", "nodes", "ms", "share",
             "GFLOP/s", "GB/s", "implementations");
  for (const graph::OpTypeProfile& t : graph::by_op_type(profile)) {
    fmt::print(out, "{:<22} {:>5} {:>9.3f} {:>5.1f}% {:>8.1f} {:>7.1f}  {}\n", t.op_type, t.nodes,
               t.milliseconds, total > 0 ? 100 * t.milliseconds / total : 0,
               per_ns(t.flops, t.milliseconds), per_ns(t.bytes, t.milliseconds),
               implementations_of(profile, t.op_type));
  }
  fmt::print(out, "\n{:<40} {:<18} {:>8} {:>6} {:>8} {:>7}  {:<13} {}\n", "node", "op", "ms",
             "share", "GFLOP/s", "GB/s", "layout", "implementation");
  for (const graph::NodeProfile& n : profile.nodes) {
    const std::string layout = n.layout_in.empty() && n.layout_out.empty()
                                   ? "-"
                                   : fmt::format("{}→{}", n.layout_in.empty() ? "-" : n.layout_in,
                                                 n.layout_out.empty() ? "-" : n.layout_out);
    fmt::print(out, "{:<40} {:<18} {:>8.3f} {:>5.1f}% {:>8.1f} {:>7.1f}  {:<13} {}\n", n.name,
               n.op_type, n.milliseconds, total > 0 ? 100 * n.milliseconds / total : 0,
               per_ns(n.flops, n.milliseconds), per_ns(n.bytes, n.milliseconds), layout,
               join(n.implementations));
  }
}

nlohmann::json profile_json(const graph::RunProfile& profile) {
  const double total = total_ms(profile);
  nlohmann::json types = nlohmann::json::array(), nodes = nlohmann::json::array();
  for (const graph::OpTypeProfile& t : graph::by_op_type(profile)) {
    types.push_back({{"op_type", t.op_type},
                     {"nodes", t.nodes},
                     {"ms", t.milliseconds},
                     {"share", total > 0 ? t.milliseconds / total : 0},
                     {"flops", t.flops},
                     {"bytes", t.bytes},
                     {"gflops", per_ns(t.flops, t.milliseconds)},
                     {"gbytes_per_s", per_ns(t.bytes, t.milliseconds)},
                     {"implementations", implementations_of(profile, t.op_type)}});
  }
  for (const graph::NodeProfile& n : profile.nodes) {
    nodes.push_back({{"name", n.name},
                     {"op_type", n.op_type},
                     {"ms", n.milliseconds},
                     {"share", total > 0 ? n.milliseconds / total : 0},
                     {"flops", n.flops},
                     {"bytes", n.bytes},
                     {"gflops", per_ns(n.flops, n.milliseconds)},
                     {"gbytes_per_s", per_ns(n.bytes, n.milliseconds)},
                     {"layout_in", n.layout_in},
                     {"layout_out", n.layout_out},
                     {"implementations", n.implementations}});
  }
  return {{"total_ms", total}, {"flops", profile.flops}, {"op_types", types}, {"nodes", nodes}};
}

}  // namespace refold::cli
