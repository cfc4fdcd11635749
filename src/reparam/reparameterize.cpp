// refold::reparameterize: the walk, the FLOP trace and the report; see
// refold/reparam/reparameterize.h.
#include "refold/reparam/reparameterize.h"

#include <set>
#include <utility>

#include "core/check.h"
#include "core/checked_math.h"
#include "refold/reparam/block.h"
#include "reparam/shape_trace.h"

namespace refold {
namespace {

struct FoundBlock {
  std::string path;
  reparam::RepBlock* block;
};

std::string join_path(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

// Pre-order; a block is a leaf of the walk; a module reached twice is visited once.
void collect(nn::Module& module, const std::string& path, std::set<const nn::Module*>& seen,
             std::vector<FoundBlock>& out) {
  if (!seen.insert(&module).second) return;
  if (auto* block = dynamic_cast<reparam::RepBlock*>(&module)) {
    out.push_back({path, block});
    return;
  }
  for (const auto& [name, child] : module.named_children())
    collect(*child, join_path(path, name), seen, out);
}

DType model_dtype(const nn::Module& model) {
  for (const auto& [name, tensor] : model.named_parameters())
    if (is_floating(tensor.dtype())) return tensor.dtype();
  return DType::Float32;
}

// Σ of the block's FLOPs over the shapes it ran on; empty when it never ran.
std::optional<std::int64_t> block_flops(const reparam::RepBlock& block,
                                        const std::vector<Shape>& shapes) {
  if (shapes.empty()) return std::nullopt;
  std::int64_t total = 0;
  for (const Shape& s : shapes) total = checked_add(total, block.flops(s), "reparameterize");
  return total;
}

void accumulate(std::optional<std::int64_t>& total, const std::optional<std::int64_t>& value) {
  if (value) total = checked_add(total.value_or(0), *value, "reparameterize");
}

std::string percent_change(std::int64_t before, std::int64_t after) {
  if (before == 0) return "";
  return fmt::format(" ({:+.1f}%)",
                     100.0 * static_cast<double>(after - before) / static_cast<double>(before));
}

std::string shown_path(const std::string& path) { return path.empty() ? "(model)" : path; }

}  // namespace

std::int64_t count_parameters(const nn::Module& module) {
  std::set<const void*> seen;
  std::int64_t total = 0;
  for (const auto& [name, tensor] : module.named_parameters())
    if (seen.insert(tensor.data_ptr()).second)
      total = checked_add(total, tensor.numel(), "count_parameters");
  return total;
}

ReparamReport reparameterize(nn::Module& model, const ReparamOptions& options) {
  std::vector<FoundBlock> blocks;
  std::set<const nn::Module*> seen;
  collect(model, "", seen, blocks);

  // The shape run happens first, on the unchanged model: if it fails nothing has changed.
  reparam::detail::ShapeTrace trace;
  if (options.input_shape) {
    const Shape& shape = *options.input_shape;
    try {
      model(zeros(shape, {model_dtype(model)}));
    } catch (const Error& e) {
      fail("reparameterize: running the model on input_shape [{}] to count FLOPs failed: {}",
           fmt::join(shape, ", "), e.what());
    }
  }

  ReparamReport report;
  report.parameters_before = count_parameters(model);
  for (const auto& [path, block] : blocks) {
    const std::vector<Shape>& shapes = trace.shapes(block);
    const std::optional<std::int64_t> before = block_flops(*block, shapes);
    accumulate(report.flops_before, before);
    if (block->is_reparameterized()) {
      report.left_as_is.push_back({path, block->type_name(), "already re-parameterized", before});
      accumulate(report.flops_after, before);
      continue;
    }
    const std::int64_t parameters_before = count_parameters(*block);
    try {
      block->reparameterize();
    } catch (const Error& e) {
      report.left_as_is.push_back({path, block->type_name(), e.what(), before});
      accumulate(report.flops_after, before);
      continue;
    }
    const std::optional<std::int64_t> after = block_flops(*block, shapes);
    accumulate(report.flops_after, after);
    report.converted.push_back(
        {path, block->type_name(), parameters_before, count_parameters(*block), before, after});
  }
  report.parameters_after = count_parameters(model);
  return report;
}

std::string ReparamReport::to_string() const {
  std::string out = fmt::format("reparameterize: {} block{} converted, {} left as {}\n",
                                converted.size(), converted.size() == 1 ? "" : "s",
                                left_as_is.size(), left_as_is.size() == 1 ? "it was" : "they were");
  for (const Converted& c : converted) {
    out += fmt::format("  converted  {}  {}  parameters {} -> {}", shown_path(c.path), c.type,
                       c.parameters_before, c.parameters_after);
    if (c.flops_before && c.flops_after)
      out += fmt::format("  FLOPs {} -> {}", *c.flops_before, *c.flops_after);
    out += "\n";
  }
  for (const Left& l : left_as_is)
    out += fmt::format("  left       {}  {}  {}\n", shown_path(l.path), l.type, l.reason);
  out += fmt::format("parameters: {} -> {}{}\n", parameters_before, parameters_after,
                     percent_change(parameters_before, parameters_after));
  if (flops_before && flops_after)
    out += fmt::format("block FLOPs: {} -> {}{}\n", *flops_before, *flops_after,
                       percent_change(*flops_before, *flops_after));
  return out;
}

}  // namespace refold
