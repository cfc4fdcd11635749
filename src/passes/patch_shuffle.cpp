// Reshape → Transpose → Reshape over the spatial axes as one PatchShuffle (patch_shuffle.h has
// the pattern and why it keeps channels_last).
#include "passes/patch_shuffle.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <utility>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/verbose.h"
#include "ops/transpose.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {

namespace {

// Splits dims[from…] into consecutive groups whose products are `targets` (each original axis
// split into factors, none merged with another); a size-1 dim joins the group after it, trailing
// ones the last group. The groups as [begin, end) index pairs, or nullopt when no such split.
std::optional<std::vector<std::pair<std::size_t, std::size_t>>> axis_groups(
    const Shape& dims, std::size_t from, const std::vector<std::int64_t>& targets) {
  std::vector<std::pair<std::size_t, std::size_t>> groups;
  std::size_t i = from;
  for (std::int64_t target : targets) {
    const std::size_t begin = i;
    std::int64_t product = 1;
    while (i < dims.size() && product < target) product *= dims[i++];
    if (product != target) return std::nullopt;
    groups.emplace_back(begin, i);
  }
  for (; i < dims.size(); ++i) {
    if (dims[i] != 1) return std::nullopt;
    groups.back().second = i + 1;
  }
  return groups;
}

// How the chain runs on NHWC memory (patch_shuffle.h): the middle's dims in memory order and
// the transpose of those that leaves y's NHWC memory; nullopt when neither rule applies.
struct NhwcPlan {
  Shape middle;
  std::vector<std::int64_t> perm;
};
std::optional<NhwcPlan> nhwc_plan(const Shape& input, const Shape& middle,
                                  const std::vector<std::int64_t>& perm, const Shape& output) {
  if (input.size() != 4 || output.size() != 4 || middle.size() < 5 ||
      perm.size() != middle.size() || perm[0] != 0 || middle[0] != input[0])
    return std::nullopt;
  Shape transposed;
  for (std::int64_t p : perm) transposed.push_back(middle[static_cast<std::size_t>(p)]);
  NhwcPlan plan;
  const auto in = axis_groups(middle, 1, {input[1], input[2], input[3]});
  const auto out = axis_groups(transposed, 1, {output[1], output[2], output[3]});
  if (in && out) {
    // Factors: memory holds N, H group, W group, C group; it must end as N, H', W', C' groups.
    std::vector<std::size_t> memory_order = {0};
    for (std::size_t g : {1, 2, 0})
      for (std::size_t d = (*in)[g].first; d < (*in)[g].second; ++d) memory_order.push_back(d);
    std::vector<std::int64_t> position(middle.size());  // middle dim → its place in memory
    for (std::size_t m = 0; m < memory_order.size(); ++m) {
      position[memory_order[m]] = static_cast<std::int64_t>(m);
      plan.middle.push_back(middle[memory_order[m]]);
    }
    plan.perm = {0};
    for (std::size_t g : {1, 2, 0})
      for (std::size_t j = (*out)[g].first; j < (*out)[g].second; ++j)
        plan.perm.push_back(position[static_cast<std::size_t>(perm[j])]);
    return plan;
  }
  if (perm[1] == 1 && middle[1] == input[1] && output[1] == input[1]) {
    // The channels stay whole: any map of plane positions, applied to C-vectors — memory holds
    // N, a₂ … a_k, C; the spatial axes move as perm moves them, C stays last.
    const auto k = static_cast<std::int64_t>(middle.size());
    plan.middle = {middle[0]};
    plan.perm = {0};
    for (std::int64_t d = 2; d < k; ++d) {
      plan.middle.push_back(middle[static_cast<std::size_t>(d)]);
      plan.perm.push_back(perm[static_cast<std::size_t>(d)] - 1);
    }
    plan.middle.push_back(middle[1]);
    plan.perm.push_back(k - 1);
    return plan;
  }
  return std::nullopt;
}

}  // namespace

PatchShuffle::PatchShuffle(Shape input, Shape middle, std::vector<std::int64_t> perm, Shape output)
    : Op("PatchShuffle"),
      input_(std::move(input)),
      middle_(std::move(middle)),
      output_(std::move(output)),
      perm_(std::move(perm)) {
  REFOLD_CHECK(perm_.size() == middle_.size(), "PatchShuffle: perm [{}] for a middle [{}]",
               fmt::join(perm_, ", "), fmt::join(middle_, ", "));
  ops::check_perm(perm_, static_cast<std::int64_t>(middle_.size()));
  const auto plan = nhwc_plan(input_, middle_, perm_, output_);
  REFOLD_CHECK(plan.has_value(),
               "PatchShuffle: [{}] → [{}] by [{}] → [{}] is not a rearrangement within each "
               "sample that splits C, H and W into factors or keeps C whole (patch_shuffle.h)",
               fmt::join(input_, ", "), fmt::join(middle_, ", "), fmt::join(perm_, ", "),
               fmt::join(output_, ", "));
  nhwc_middle_ = plan->middle;
  nhwc_perm_ = plan->perm;
}

std::vector<Tensor> PatchShuffle::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "PatchShuffle: expects 1 input, got {}",
               inputs.size());
  const Tensor& x = inputs[0];
  REFOLD_CHECK(x.sizes() == input_, "PatchShuffle: built for an input [{}], got [{}]",
               fmt::join(input_, ", "), fmt::join(x.sizes(), ", "));
  // One copy either way, Tensor::copy_'s (tiled where it is a transpose), which the dispatch
  // log and the profiler call "copy", as they do a Rearrange's.
  log_dispatch("PatchShuffle", "copy");
  if (x.suggest_memory_format() != MemoryFormat::ChannelsLast) {
    // NCHW: the three nodes as written.
    const Tensor t = reference::transpose(x.contiguous().reshape(middle_), perm_);
    return {t.reshape(output_)};
  }
  // NHWC: the same map on the middle's dims in memory order (see the constructor).
  const Tensor nhwc = x.contiguous(MemoryFormat::ChannelsLast).permute({0, 2, 3, 1});
  const Tensor t = reference::transpose(nhwc.reshape(nhwc_middle_), nhwc_perm_);
  return {t.reshape({output_[0], output_[2], output_[3], output_[1]}).permute({0, 3, 1, 2})};
}

nn::ModulePtr build_patch_shuffle(const graph::Node& node) {
  for (const char* name : {"input_shape", "middle_shape", "perm", "output_shape"})
    REFOLD_CHECK(node.attributes.has(name), "{}: PatchShuffle needs the attribute '{}'",
                 describe(node), name);
  const auto& a = node.attributes;
  return std::make_shared<PatchShuffle>(a.get_ints("input_shape"), a.get_ints("middle_shape"),
                                        a.get_ints("perm"), a.get_ints("output_shape"));
}

namespace {

bool chain_node(const graph::Node& node, const char* op_type) {
  return is_op(node, op_type) && node.parts.empty() && node.outputs.size() == 1 &&
         !node.inputs.empty() && !node.inputs[0].empty();
}

}  // namespace

std::optional<PatchShuffleMatch> match_patch_shuffle(const graph::Graph& graph, std::size_t index,
                                                     StaticShapes& shapes) {
  const graph::Node& transpose = graph.nodes()[index];
  if (!chain_node(transpose, "Transpose") || transpose.inputs.size() != 1) return std::nullopt;
  const auto* op = dynamic_cast<const ops::Transpose*>(transpose.module.get());
  if (op == nullptr) return std::nullopt;
  const auto around = between_reshapes(graph, index);
  if (!around) return std::nullopt;
  const std::string& r = transpose.inputs[0];
  PatchShuffleMatch m;
  m.x = around->x;
  m.y = around->y;
  const auto xs = shapes.shape(m.x), rs = shapes.shape(r), ys = shapes.shape(m.y);
  if (!xs || !rs || !ys || xs->size() != 4 || ys->size() != 4 || rs->size() < 5)
    return std::nullopt;
  // The batch stays where it is, and the chain is one of the two rearrangements the NHWC run
  // knows (patch_shuffle.h).
  m.perm = op->perm();
  if (!nhwc_plan(*xs, *rs, m.perm, *ys)) return std::nullopt;
  m.input = *xs;
  m.middle = *rs;
  m.output = *ys;
  m.parts = {around->first, index, around->last};
  return m;
}

std::string fuse_patch_shuffle(graph::Graph& graph, const PatchShuffleMatch& m) {
  const graph::Node& transpose = graph.nodes()[m.parts[1]];
  graph::Node fused;
  fused.name = transpose.name;
  fused.op_type = "PatchShuffle";
  fused.domain = "refold";
  fused.inputs = {m.x};
  fused.outputs = {m.y};
  fused.origin = "Reshape+Transpose+Reshape";
  fused.attributes.set("input_shape", m.input);
  fused.attributes.set("middle_shape", m.middle);
  fused.attributes.set("perm", m.perm);
  fused.attributes.set("output_shape", m.output);
  const std::string note = fmt::format(
      "rewrote {} between Reshapes ([{}] → [{}]) as a PatchShuffle that keeps channels_last",
      describe(transpose), fmt::join(m.input, ", "), fmt::join(m.output, ", "));
  replace_with_fused(graph, m.parts, std::move(fused));
  return note;
}

}  // namespace refold::passes::detail
