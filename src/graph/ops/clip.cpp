#include "refold/graph/ops/clip.h"

#include <fmt/ranges.h>

#include "core/check.h"
#include "refold/reference_extra.h"

namespace refold::graph::ops {

std::optional<double> scalar_bound(const Tensor& t, const char* op, const char* name) {
  if (!t.defined()) return std::nullopt;
  REFOLD_CHECK(t.numel() == 1, "{}: {} must be a scalar, got [{}]", op, name,
               fmt::join(t.sizes(), ", "));
  if (t.dtype() == DType::Int64) return static_cast<double>(*t.data<std::int64_t>());
  return static_cast<double>(t.item());
}

std::vector<Tensor> Clip::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(!in.empty() && in.size() <= 3 && in[0].defined(),
               "Clip: expects X and optional min, max; got {} inputs", in.size());
  const auto lo = scalar_bound(in.size() > 1 ? in[1] : Tensor(), "Clip", "min");
  const auto hi = scalar_bound(in.size() > 2 ? in[2] : Tensor(), "Clip", "max");
  for (std::size_t i = 1; i < in.size(); ++i)
    REFOLD_CHECK(!in[i].defined() || in[i].dtype() == in[0].dtype(),
                 "Clip: {} has dtype {} but X has {}", i == 1 ? "min" : "max",
                 dtype_name(in[i].dtype()), dtype_name(in[0].dtype()));
  return {reference::clip(in[0], lo, hi)};
}

std::vector<Tensor> HardSigmoid::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 1 && in[0].defined(), "HardSigmoid: expects 1 input, got {}",
               in.size());
  return {reference::hard_sigmoid(in[0], alpha_, beta_)};
}

}  // namespace refold::graph::ops
