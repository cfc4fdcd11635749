// Reshape → Transpose → Reshape over the spatial axes as one PatchShuffle (patch_shuffle.h has
// the pattern and why it keeps channels_last).
#include "passes/patch_shuffle.h"

#include <fmt/format.h>

#include "core/check.h"
#include "kernels/reference/tensor_ops.h"
#include "ops/transpose.h"
#include "passes/branch_nodes.h"

namespace refold::passes::detail {

PatchShuffle::PatchShuffle(Shape input, Shape middle, std::vector<std::int64_t> perm, Shape output)
    : Op("PatchShuffle"),
      input_(std::move(input)),
      middle_(std::move(middle)),
      output_(std::move(output)),
      perm_(std::move(perm)) {
  REFOLD_CHECK(input_.size() == 4 && output_.size() == 4 && middle_.size() >= 5 &&
                   perm_.size() == middle_.size() && perm_[0] == 0 && perm_[1] == 1,
               "PatchShuffle: needs a 4-d input and output, a 5-d or larger middle and a perm "
               "that keeps axes 0 and 1 (got [{}] → [{}] by [{}] → [{}])",
               fmt::join(input_, ", "), fmt::join(middle_, ", "), fmt::join(perm_, ", "),
               fmt::join(output_, ", "));
  ops::check_perm(perm_, static_cast<std::int64_t>(middle_.size()));
}

std::vector<Tensor> PatchShuffle::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() == 1 && inputs[0].defined(), "PatchShuffle: expects 1 input, got {}",
               inputs.size());
  const Tensor& x = inputs[0];
  REFOLD_CHECK(x.sizes() == input_, "PatchShuffle: built for an input [{}], got [{}]",
               fmt::join(input_, ", "), fmt::join(x.sizes(), ", "));
  if (x.suggest_memory_format() != MemoryFormat::ChannelsLast) {
    // NCHW: the three nodes as written.
    const Tensor t = reference::transpose(x.contiguous().reshape(middle_), perm_);
    return {t.reshape(output_)};
  }
  // NHWC: the same map on [N, H, W, C] with C kept innermost (see the header).
  const std::size_t k = middle_.size();
  Shape middle = {middle_[0]};
  Shape perm = {0};
  for (std::size_t j = 2; j < k; ++j) {
    middle.push_back(middle_[j]);
    perm.push_back(perm_[j] - 1);
  }
  middle.push_back(middle_[1]);
  perm.push_back(static_cast<std::int64_t>(k) - 1);
  const Tensor nhwc = x.contiguous(MemoryFormat::ChannelsLast).permute({0, 2, 3, 1});
  const Tensor t = reference::transpose(nhwc.reshape(middle), perm);
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
  // r = Reshape(x, …), read by the Transpose alone.
  const std::string& r = transpose.inputs[0];
  const auto first = graph.producer(r);
  if (!first || !single_use_problem(graph, r, index).empty()) return std::nullopt;
  if (!chain_node(graph.nodes()[*first], "Reshape")) return std::nullopt;
  // y = Reshape(t, …), the one reader of t.
  const std::string& t = transpose.outputs[0];
  if (graph.is_graph_output(t)) return std::nullopt;
  const std::vector<std::size_t> readers = graph.consumers(t);
  if (readers.size() != 1 || !chain_node(graph.nodes()[readers[0]], "Reshape") ||
      graph.nodes()[readers[0]].inputs[0] != t)
    return std::nullopt;
  PatchShuffleMatch m;
  m.x = graph.nodes()[*first].inputs[0];
  m.y = graph.nodes()[readers[0]].outputs[0];
  if (graph.is_constant(m.x)) return std::nullopt;
  const auto xs = shapes.shape(m.x), rs = shapes.shape(r), ys = shapes.shape(m.y);
  if (!xs || !rs || !ys || xs->size() != 4 || ys->size() != 4 || rs->size() < 5)
    return std::nullopt;
  // Batch and channels stay where they are: the chain only moves positions within a plane.
  auto same_nc = [&](const Shape& s) { return s[0] == (*xs)[0] && s[1] == (*xs)[1]; };
  if (!same_nc(*rs) || !same_nc(*ys)) return std::nullopt;
  m.perm = op->perm();
  if (m.perm.size() != rs->size() || m.perm[0] != 0 || m.perm[1] != 1) return std::nullopt;
  m.input = *xs;
  m.middle = *rs;
  m.output = *ys;
  m.parts = {*first, index, readers[0]};
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
