// Reference normalizations that compute their statistics from the input (ONNX
// LayerNormalization, GroupNormalization, InstanceNormalization, LRN): sums in double, two passes
// (mean, then the mean squared deviation), rounded once; any strides.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/binary_checks.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace {

void check_float(const Tensor& t, const char* op, const char* name) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", op, name);
  REFOLD_CHECK(is_floating(t.dtype()), "{}: {} has dtype {}; expected float32 or bfloat16", op,
               name, dtype_name(t.dtype()));
}

// Mean, (population) variance and 1/√(var + ε) of the elements of x that `group_of(index)` maps
// to each of `groups` groups.
struct Statistics {
  std::vector<double> mean, var, inv_std;
};
template <typename GroupOf>
Statistics statistics(const Tensor& x, GroupOf&& group_of, std::int64_t groups, double epsilon) {
  const auto g = static_cast<std::size_t>(groups);
  std::vector<double> sum(g, 0.0), count(g, 0.0), squares(g, 0.0);
  const FloatReader in(x);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const std::size_t k = group_of(idx);
    sum[k] += in.at_offset(offset_of(idx, in.strides()));
    count[k] += 1;
  });
  Statistics s;
  s.mean.resize(g);
  s.var.resize(g);
  s.inv_std.resize(g);
  for (std::size_t k = 0; k < g; ++k) s.mean[k] = sum[k] / count[k];
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const std::size_t k = group_of(idx);
    const double d = in.at_offset(offset_of(idx, in.strides())) - s.mean[k];
    squares[k] += d * d;
  });
  for (std::size_t k = 0; k < g; ++k) {
    s.var[k] = squares[k] / count[k];
    s.inv_std[k] = 1.0 / std::sqrt(s.var[k] + epsilon);
  }
  return s;
}

}  // namespace

// y = (x − μ) / √(σ² + ε) · scale + bias, μ and σ² over the dimensions [axis, rank) of each
// index of the dimensions before axis.
LayerNormResult layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias,
                           std::int64_t axis, double epsilon) {
  const char* op = "LayerNormalization";
  check_float(x, op, "X");
  check_float(scale, op, "Scale");
  if (bias.defined()) check_float(bias, op, "B");
  const std::int64_t rank = x.dim();
  const auto first = static_cast<std::size_t>(detail::wrap_axis(axis, rank, op));
  for (const Tensor* t : {&scale, &bias}) {
    if (!t->defined()) continue;
    REFOLD_CHECK(t->dim() <= rank - static_cast<std::int64_t>(first) &&
                     detail::broadcast_shape(x.sizes(), t->sizes(), op) == x.sizes(),
                 "{}: {} of shape [{}] does not broadcast to the normalized shape of X [{}] "
                 "(axis {})",
                 op, t == &scale ? "Scale" : "B", fmt::join(t->sizes(), ", "),
                 fmt::join(x.sizes(), ", "), axis);
  }
  // Statistics per index of the leading dims: row-major over them, 0 over the normalized ones.
  Shape group_strides(static_cast<std::size_t>(rank), 0), stat_sizes = x.sizes();
  std::int64_t groups = 1;
  for (std::size_t d = static_cast<std::size_t>(rank); d-- > 0;) {
    if (d >= first) {
      stat_sizes[d] = 1;
    } else {
      group_strides[d] = groups;
      groups *= x.sizes()[d];
    }
  }
  const auto group_of = [&](const Shape& idx) {
    return static_cast<std::size_t>(offset_of(idx, group_strides));
  };
  const Statistics s = statistics(x, group_of, groups, epsilon);
  LayerNormResult result;
  result.y = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  const Tensor shift = bias.defined() ? bias : full({}, 0.0f, x.dtype());  // no B: + 0
  const FloatReader in(x), gamma(scale), beta(shift);
  const Shape gamma_strides = detail::broadcast_strides(scale, x.sizes());
  const Shape beta_strides = detail::broadcast_strides(shift, x.sizes());
  const FloatWriter out(result.y);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const std::size_t k = group_of(idx);
    const double y = (in.at_offset(offset_of(idx, in.strides())) - s.mean[k]) * s.inv_std[k] *
                         gamma.at_offset(offset_of(idx, gamma_strides)) +
                     beta.at_offset(offset_of(idx, beta_strides));
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(y, x.dtype()));
  });
  result.mean = empty(stat_sizes, DType::Float32);
  result.inv_std_dev = empty(stat_sizes, DType::Float32);
  for (std::size_t k = 0; k < s.mean.size(); ++k) {
    result.mean.data<float>()[k] = static_cast<float>(s.mean[k]);
    result.inv_std_dev.data<float>()[k] = static_cast<float>(s.inv_std[k]);
  }
  return result;
}

// x [N, C, …]: statistics per (n, group) over the group's C / groups channels and every
// spatial position; y = (x − μ) / √(σ² + ε) · scale[c] + bias[c].
Tensor group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, std::int64_t groups,
                  double epsilon) {
  const char* op = "GroupNormalization";
  check_float(x, op, "X");
  check_float(scale, op, "scale");
  check_float(bias, op, "bias");
  REFOLD_CHECK(x.dim() >= 2, "{}: X must be at least 2-d [N, C, …], got [{}]", op,
               fmt::join(x.sizes(), ", "));
  const std::int64_t channels = x.size(1);
  REFOLD_CHECK(groups > 0 && channels % groups == 0, "{}: {} channels do not split into {} groups",
               op, channels, groups);
  for (const Tensor* t : {&scale, &bias})
    REFOLD_CHECK(t->numel() == channels && t->dim() == 1,
                 "{}: {} must be 1-d of length {} (X's channels), got [{}]", op,
                 t == &scale ? "scale" : "bias", channels, fmt::join(t->sizes(), ", "));
  const std::int64_t per_group = channels / groups;
  const auto group_of = [&](const Shape& idx) {
    return static_cast<std::size_t>(idx[0] * groups + idx[1] / per_group);
  };
  const Statistics s = statistics(x, group_of, x.size(0) * groups, epsilon);
  Tensor y = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  const FloatReader in(x), gamma(scale), beta(bias);
  const FloatWriter out(y);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const std::size_t k = group_of(idx);
    const double v = (in.at_offset(offset_of(idx, in.strides())) - s.mean[k]) * s.inv_std[k] *
                         gamma.at_offset(idx[1] * gamma.stride(0)) +
                     beta.at_offset(idx[1] * beta.stride(0));
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(v, x.dtype()));
  });
  return y;
}

// x [N, C, …]: statistics per channel over every other dim (the batch's own mean and population
// variance), y = (x − μ_c) / √(σ²_c + ε) · scale_c + bias_c; the running statistics it would
// carry on are input·momentum + batch·(1 − momentum).
BatchNormTrainingResult batch_norm_training(const Tensor& x, const Tensor& scale,
                                            const Tensor& bias, const Tensor& input_mean,
                                            const Tensor& input_var, double epsilon,
                                            double momentum) {
  const char* op = "BatchNormalization";
  check_float(x, op, "X");
  REFOLD_CHECK(x.dim() >= 2, "{}: X must be at least 2-d [N, C, …], got [{}]", op,
               fmt::join(x.sizes(), ", "));
  const std::int64_t channels = x.size(1);
  const char* names[] = {"scale", "B", "input_mean", "input_var"};
  const Tensor* params[] = {&scale, &bias, &input_mean, &input_var};
  for (std::size_t i = 0; i < 4; ++i) {
    check_float(*params[i], op, names[i]);
    REFOLD_CHECK(params[i]->dim() == 1 && params[i]->numel() == channels,
                 "{}: {} must be 1-d of length {} (X's channels), got [{}]", op, names[i], channels,
                 fmt::join(params[i]->sizes(), ", "));
  }
  REFOLD_CHECK(x.numel() > 0, "{}: X [{}] is empty: a batch with no elements has no statistics", op,
               fmt::join(x.sizes(), ", "));
  const auto channel_of = [](const Shape& idx) { return static_cast<std::size_t>(idx[1]); };
  const Statistics s = statistics(x, channel_of, channels, epsilon);
  BatchNormTrainingResult result;
  result.y = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  const FloatReader in(x), gamma(scale), beta(bias);
  const FloatWriter out(result.y);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    const std::size_t c = channel_of(idx);
    const auto at = static_cast<std::int64_t>(c);
    const double v = (in.at_offset(offset_of(idx, in.strides())) - s.mean[c]) * s.inv_std[c] *
                         gamma.at_offset(at * gamma.stride(0)) +
                     beta.at_offset(at * beta.stride(0));
    out.set_offset(offset_of(idx, out.strides()), round_to_dtype(v, x.dtype()));
  });
  const auto running = [&](const Tensor& input, const std::vector<double>& batch) {
    Tensor r = empty({channels}, input.dtype());
    const FloatReader from(input);
    const FloatWriter to(r);
    for (std::int64_t c = 0; c < channels; ++c) {
      const double v = from.at_offset(c * from.stride(0)) * momentum +
                       batch[static_cast<std::size_t>(c)] * (1.0 - momentum);
      to.set_offset(c, round_to_dtype(v, input.dtype()));
    }
    return r;
  };
  result.running_mean = running(input_mean, s.mean);
  result.running_var = running(input_var, s.var);
  return result;
}

// LRN across channels: y = x / (bias + α/size · Σ_{c'} x[c']²)^β, c' over
// [c − ⌊(size − 1)/2⌋, c + ⌈(size − 1)/2⌉] ∩ [0, C).
Tensor lrn(const Tensor& x, std::int64_t size, double alpha, double beta, double bias) {
  const char* op = "LRN";
  check_float(x, op, "X");
  REFOLD_CHECK(x.dim() >= 2, "{}: X must be at least 2-d [N, C, …], got [{}]", op,
               fmt::join(x.sizes(), ", "));
  const std::int64_t channels = x.size(1);
  const std::int64_t before = (size - 1) / 2, after = size - 1 - before;
  Tensor y = empty_like(x, {x.dtype(), MemoryFormat::Preserve});
  const FloatReader in(x);
  const FloatWriter out(y);
  for_each_index(x.sizes(), [&](const Shape& idx) {
    Shape at = idx;
    double squares = 0.0;
    for (std::int64_t c = std::max<std::int64_t>(0, idx[1] - before);
         c <= std::min(channels - 1, idx[1] + after); ++c) {
      at[1] = c;
      const double v = in.at_offset(offset_of(at, in.strides()));
      squares += v * v;
    }
    const double v = in.at_offset(offset_of(idx, in.strides()));
    out.set_offset(offset_of(idx, out.strides()),
                   round_to_dtype(v / std::pow(bias + alpha / size * squares, beta), x.dtype()));
  });
  return y;
}

}  // namespace refold::reference
