// The kernel algebra of structural re-parameterization; the math of each function is in
// refold/reparam/kernel_algebra.h and docs/reparameterization.md. Every function reads its
// operands into double, computes there, and rounds each result element once to the operands'
// dtype, so a fused float32 kernel differs from the exact one by at most half an ulp.
#include "refold/reparam/kernel_algebra.h"

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/check.h"
#include "core/checked_math.h"
#include "core/element_access.h"

namespace refold::reparam {
namespace {

// ---- validation ----------------------------------------------------------------------------

void check_float_tensor(std::string_view op, std::string_view name, const Tensor& t) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", op, name);
  REFOLD_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::BFloat16,
               "{}: {} has dtype {}; only float32 and bfloat16 are supported", op, name,
               dtype_name(t.dtype()));
}

// All operands share one dtype (no promotion, as in PyTorch's conv); `reference` names the
// operand that set it.
void check_same_dtype(std::string_view op, std::string_view name, const Tensor& t, DType dtype,
                      std::string_view reference = "the weight") {
  REFOLD_CHECK(t.dtype() == dtype, "{}: {} has dtype {} but {} has {}", op, name,
               dtype_name(t.dtype()), reference, dtype_name(dtype));
}

// A 1-d parameter of `length` elements in `dtype` (bias, BN statistics).
void check_vector(std::string_view op, std::string_view name, const Tensor& t, std::int64_t length,
                  DType dtype) {
  check_float_tensor(op, name, t);
  check_same_dtype(op, name, t, dtype);
  REFOLD_CHECK(t.dim() == 1 && t.size(0) == length,
               "{}: {} has shape [{}], expected [{}] (one value per output channel)", op, name,
               fmt::join(t.sizes(), ", "), length);
}

void check_groups(std::string_view op, std::int64_t groups) {
  REFOLD_CHECK(groups > 0, "{}: groups ({}) must be positive", op, groups);
}

void check_kernel_size(std::string_view op, Size2d kernel) {
  REFOLD_CHECK(kernel.h > 0 && kernel.w > 0, "{}: kernel size ({}, {}) must be positive", op,
               kernel.h, kernel.w);
}

void check_float_dtype(std::string_view op, DType dtype) {
  REFOLD_CHECK(is_floating(dtype), "{}: dtype {} is not supported (float32 or bfloat16)", op,
               dtype_name(dtype));
}

// The size checks of a kernel built from scratch with one input channel per output channel
// (identity, average pooling): C > 0, groups dividing C, a positive kernel.
void check_per_channel_kernel(std::string_view op, std::int64_t channels, std::int64_t groups,
                              Size2d kernel) {
  REFOLD_CHECK(channels > 0, "{}: channels ({}) must be positive", op, channels);
  check_groups(op, groups);
  REFOLD_CHECK(channels % groups == 0, "{}: groups ({}) must divide channels ({})", op, groups,
               channels);
  check_kernel_size(op, kernel);
}

// A 4-d float weight laid out as `layout`, every size positive, and positive groups.
void check_weight(std::string_view op, std::string_view name, const Tensor& weight,
                  std::string_view layout, std::int64_t groups) {
  check_float_tensor(op, name, weight);
  REFOLD_CHECK(weight.dim() == 4, "{}: {} must be 4-d {}, got {}", op, name, layout,
               weight.description());
  for (std::int64_t s : weight.sizes())
    REFOLD_CHECK(s > 0, "{}: {} has an empty dimension: {}", op, name, weight.description());
  check_groups(op, groups);
}

// A ConvKernel: 4-d float weight [O, I/g, kh, kw] with every size positive, groups dividing O,
// an optional [O] bias of the weight's dtype.
void check_conv(std::string_view op, std::string_view name, const ConvKernel& k) {
  check_weight(op, fmt::format("{} weight", name), k.weight, "[out, in/groups, kh, kw]", k.groups);
  REFOLD_CHECK(k.weight.size(0) % k.groups == 0, "{}: {} groups ({}) must divide out_channels ({})",
               op, name, k.groups, k.weight.size(0));
  checked_mul(k.weight.size(1), k.groups, op);  // in_channels() must not overflow
  if (k.bias.defined())
    check_vector(op, fmt::format("{} bias", name), k.bias, k.weight.size(0), k.weight.dtype());
}

void check_conv_transpose(std::string_view op, const ConvTransposeKernel& k) {
  check_weight(op, "weight", k.weight, "[in, out/groups, kh, kw]", k.groups);
  REFOLD_CHECK(k.weight.size(0) % k.groups == 0, "{}: groups ({}) must divide in_channels ({})", op,
               k.groups, k.weight.size(0));
  const std::int64_t out_channels = checked_mul(k.weight.size(1), k.groups, op);
  if (k.bias.defined()) check_vector(op, "bias", k.bias, out_channels, k.weight.dtype());
}

// ---- values in double ----------------------------------------------------------------------

// A tensor's elements in logical row-major order, whatever its strides.
std::vector<double> values_of(const Tensor& t) {
  const std::vector<float> f = t.to_vector();
  return {f.begin(), f.end()};
}

// An undefined bias reads as zeros.
std::vector<double> bias_or_zero(const Tensor& bias, std::int64_t length) {
  return bias.defined() ? values_of(bias) : std::vector<double>(static_cast<std::size_t>(length));
}

// A contiguous tensor of `dtype` holding `values` (row-major), each rounded once.
Tensor make_tensor(const std::vector<double>& values, const Shape& sizes, DType dtype) {
  std::vector<float> rounded(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) rounded[i] = round_to_dtype(values[i], dtype);
  // Every rounded value is representable in `dtype`, so from_values converts exactly.
  return from_values(rounded, sizes, {dtype});
}

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

// The BN as a per-channel affine map: s = γ/√(σ² + ε), t = β − μ·s.
ChannelAffine batch_norm_scale(std::string_view op, const BatchNormParams& bn,
                               std::int64_t channels, DType dtype) {
  check_vector(op, "running_mean", bn.running_mean, channels, dtype);
  check_vector(op, "running_var", bn.running_var, channels, dtype);
  if (bn.weight.defined()) check_vector(op, "bn weight", bn.weight, channels, dtype);
  if (bn.bias.defined()) check_vector(op, "bn bias", bn.bias, channels, dtype);
  REFOLD_CHECK(std::isfinite(bn.eps) && bn.eps >= 0, "{}: eps ({}) must be finite and >= 0", op,
               bn.eps);
  const std::vector<double> var = values_of(bn.running_var);
  const std::vector<double> mean = values_of(bn.running_mean);
  // affine=False: γ = 1, β = 0.
  const std::vector<double> gamma =
      bn.weight.defined() ? values_of(bn.weight) : std::vector<double>(idx(channels), 1.0);
  ChannelAffine out{std::vector<double>(idx(channels)),
                    bn.bias.defined() ? values_of(bn.bias) : std::vector<double>(idx(channels))};
  for (std::size_t c = 0; c < var.size(); ++c) {
    // A negative variance gives a NaN scale and σ² + ε == 0 an infinite one; either would be
    // baked silently into the fused weights (docs/reliability.md F18, F19), so name the channel.
    // A NaN variance is data, not a bad argument: it propagates like the reference BN does.
    REFOLD_CHECK(!(var[c] < 0), "{}: running_var[{}] = {} is negative", op, c, var[c]);
    REFOLD_CHECK(var[c] + bn.eps != 0,
                 "{}: running_var[{}] + eps is 0 (division by zero; var {}, eps {})", op, c, var[c],
                 bn.eps);
    out.scale[c] = gamma[c] / std::sqrt(var[c] + bn.eps);
    out.shift[c] -= mean[c] * out.scale[c];
  }
  return out;
}

// An affine map of 1 value (every channel) or `channels` values, as `channels` values.
ChannelAffine per_channel(std::string_view op, const ChannelAffine& a, std::int64_t channels) {
  const auto spread = [&](const std::vector<double>& v, const char* name) {
    REFOLD_CHECK(v.size() == 1 || v.size() == idx(channels),
                 "{}: {} {} values for {} channels (1 or one per channel)", op, v.size(), name,
                 channels);
    return v.size() == 1 ? std::vector<double>(idx(channels), v[0]) : v;
  };
  return {spread(a.scale, "scale"), spread(a.shift, "shift")};
}

// The bias after the map, b'[o] = b[o]·a[o] + t[o] (b = 0 when there is none), rounded.
Tensor affine_bias(const Tensor& bias, const ChannelAffine& a, std::int64_t out, DType dtype) {
  std::vector<double> b = bias_or_zero(bias, out);
  for (std::size_t o = 0; o < b.size(); ++o) b[o] = b[o] * a.scale[o] + a.shift[o];
  return make_tensor(b, {out}, dtype);
}

// W'[o] = W[o]·a[o], b'[o] = b[o]·a[o] + t[o]; `a` has one value per output channel.
ConvKernel apply_affine(const ConvKernel& conv, const ChannelAffine& a) {
  const DType dtype = conv.weight.dtype();
  const std::int64_t out = conv.out_channels();
  std::vector<double> w = values_of(conv.weight);
  const std::size_t per_out = w.size() / idx(out);  // I/g · kh · kw, row-major after dim 0
  for (std::size_t i = 0; i < w.size(); ++i) w[i] *= a.scale[i / per_out];
  return {make_tensor(w, conv.weight.sizes(), dtype), affine_bias(conv.bias, a, out, dtype),
          conv.groups};
}

// Weight [in, out/g, kh, kw]: the element [g·(in/g) + i, j, :, :] feeds output channel
// o = g·(out/g) + j, so it is scaled by a[o] — the group comes from dim 0, the position
// within the group from dim 1.
ConvTransposeKernel apply_affine(const ConvTransposeKernel& conv, const ChannelAffine& a) {
  const DType dtype = conv.weight.dtype();
  const std::int64_t in = conv.in_channels(), out = conv.out_channels();
  const std::int64_t in_per_group = in / conv.groups, out_per_group = conv.weight.size(1);
  std::vector<double> w = values_of(conv.weight);
  const std::size_t taps = idx(conv.weight.size(2) * conv.weight.size(3));
  for (std::int64_t r = 0; r < in; ++r) {
    const std::int64_t g = r / in_per_group;
    for (std::int64_t j = 0; j < out_per_group; ++j) {
      const double scale = a.scale[idx(g * out_per_group + j)];
      const std::size_t base = (idx(r) * idx(out_per_group) + idx(j)) * taps;
      for (std::size_t t = 0; t < taps; ++t) w[base + t] *= scale;
    }
  }
  return {make_tensor(w, conv.weight.sizes(), dtype), affine_bias(conv.bias, a, out, dtype),
          conv.groups};
}

// [O, I/g, kh, kw] zeros, as doubles, for the kernels built from scratch.
std::vector<double> zero_weight(std::string_view op, std::int64_t out, std::int64_t in_per_group,
                                Size2d kernel) {
  const std::int64_t n = checked_numel(Shape{out, in_per_group, kernel.h, kernel.w}, op);
  return std::vector<double>(idx(n));
}

std::string pads_text(const Pads2d& p) {
  return fmt::format("(top {}, left {}, bottom {}, right {})", p.top, p.left, p.bottom, p.right);
}

}  // namespace

// ---- BN and per-channel affine folding ---------------------------------------------------

ChannelAffine batch_norm_affine(const BatchNormParams& bn) {
  constexpr std::string_view op = "batch_norm_affine";
  check_float_tensor(op, "running_mean", bn.running_mean);
  REFOLD_CHECK(bn.running_mean.dim() == 1, "{}: running_mean must be 1-d, got {}", op,
               bn.running_mean.description());
  return batch_norm_scale(op, bn, bn.running_mean.size(0), bn.running_mean.dtype());
}

// W'[o] = W[o]·s[o];  b'[o] = b[o]·s[o] + (β[o] − μ[o]·s[o]) = (b[o] − μ[o])·s[o] + β[o].
ConvKernel fold_batch_norm(const ConvKernel& conv, const BatchNormParams& bn) {
  constexpr std::string_view op = "fold_batch_norm";
  check_conv(op, "conv", conv);
  return apply_affine(conv, batch_norm_scale(op, bn, conv.out_channels(), conv.weight.dtype()));
}

ConvTransposeKernel fold_batch_norm_into_conv_transpose(const ConvTransposeKernel& conv,
                                                        const BatchNormParams& bn) {
  constexpr std::string_view op = "fold_batch_norm_into_conv_transpose";
  check_conv_transpose(op, conv);
  return apply_affine(conv, batch_norm_scale(op, bn, conv.out_channels(), conv.weight.dtype()));
}

ConvKernel fold_affine(const ConvKernel& conv, const ChannelAffine& affine) {
  constexpr std::string_view op = "fold_affine";
  check_conv(op, "conv", conv);
  return apply_affine(conv, per_channel(op, affine, conv.out_channels()));
}

ConvKernel fold_affine_before_conv(const ConvKernel& conv, const ChannelAffine& affine) {
  constexpr std::string_view op = "fold_affine_before_conv";
  check_conv(op, "conv", conv);
  const ChannelAffine a = per_channel(op, affine, conv.in_channels());
  const DType dtype = conv.weight.dtype();
  const std::int64_t out = conv.out_channels(), in_per_group = conv.weight.size(1);
  const std::int64_t out_per_group = out / conv.groups;
  const std::size_t taps = idx(conv.weight.size(2) * conv.weight.size(3));
  std::vector<double> w = values_of(conv.weight);
  std::vector<double> b = bias_or_zero(conv.bias, out);
  for (std::int64_t o = 0; o < out; ++o)
    for (std::int64_t i = 0; i < in_per_group; ++i) {
      const std::size_t c = idx((o / out_per_group) * in_per_group + i);
      const std::size_t base = (idx(o) * idx(in_per_group) + idx(i)) * taps;
      for (std::size_t t = 0; t < taps; ++t) {
        b[idx(o)] += w[base + t] * a.shift[c];
        w[base + t] *= a.scale[c];
      }
    }
  return {make_tensor(w, conv.weight.sizes(), dtype), make_tensor(b, {out}, dtype), conv.groups};
}

ConvTransposeKernel fold_affine_into_conv_transpose(const ConvTransposeKernel& conv,
                                                    const ChannelAffine& affine) {
  constexpr std::string_view op = "fold_affine_into_conv_transpose";
  check_conv_transpose(op, conv);
  return apply_affine(conv, per_channel(op, affine, conv.out_channels()));
}

// The features run along dim `feature_axis` of the 2-d weight: W'[.., n] = W[.., n]·a[n] (or
// W'[n, ..] for axis 0), b'[n] = b[n]·a[n] + t[n].
namespace {

// A 2-d float weight, features on axis 0 or 1, and a bias of one value per feature if any.
void check_linear(std::string_view op, const LinearKernel& linear) {
  check_float_tensor(op, "weight", linear.weight);
  REFOLD_CHECK(linear.weight.dim() == 2, "{}: weight must be 2-d, got {}", op,
               linear.weight.description());
  REFOLD_CHECK(linear.feature_axis == 0 || linear.feature_axis == 1,
               "{}: feature_axis ({}) must be 0 or 1", op, linear.feature_axis);
  if (linear.bias.defined())
    check_vector(op, "bias", linear.bias, linear.weight.size(linear.feature_axis),
                 linear.weight.dtype());
}

}  // namespace

LinearKernel fold_affine_into_linear(const LinearKernel& linear, const ChannelAffine& affine) {
  constexpr std::string_view op = "fold_affine_into_linear";
  check_linear(op, linear);
  const DType dtype = linear.weight.dtype();
  const std::int64_t n = linear.weight.size(linear.feature_axis);
  const ChannelAffine a = per_channel(op, affine, n);
  std::vector<double> w = values_of(linear.weight);
  const auto cols = idx(linear.weight.size(1));
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] *= a.scale[linear.feature_axis == 1 ? i % cols : i / cols];
  return {make_tensor(w, linear.weight.sizes(), dtype), affine_bias(linear.bias, a, n, dtype),
          linear.feature_axis};
}

// The input features k run along the weight's other dim: W'[k, n] = a[k]·W[k, n] (W'[n, k] for
// feature axis 0), b'[n] = b[n] + Σ_k t[k]·W[k, n].
LinearKernel fold_affine_before_linear(const LinearKernel& linear, const ChannelAffine& affine) {
  constexpr std::string_view op = "fold_affine_before_linear";
  check_linear(op, linear);
  const DType dtype = linear.weight.dtype();
  const std::int64_t n = linear.weight.size(linear.feature_axis);
  const std::int64_t k = linear.weight.size(1 - linear.feature_axis);
  const ChannelAffine a = per_channel(op, affine, k);
  std::vector<double> w = values_of(linear.weight);
  std::vector<double> b = bias_or_zero(linear.bias, n);
  const auto cols = idx(linear.weight.size(1));
  for (std::size_t i = 0; i < w.size(); ++i) {
    const std::size_t row = i / cols, col = i % cols;
    const std::size_t in = linear.feature_axis == 1 ? row : col;
    const std::size_t out = linear.feature_axis == 1 ? col : row;
    b[out] += a.shift[in] * w[i];
    w[i] *= a.scale[in];
  }
  return {make_tensor(w, linear.weight.sizes(), dtype), make_tensor(b, {n}, dtype),
          linear.feature_axis};
}

// W = Σ W_i, b = Σ b_i (an absent bias is zero; the sum has one where any term has).
LinearKernel sum_linear(const std::vector<LinearKernel>& terms) {
  constexpr std::string_view op = "sum_linear";
  REFOLD_CHECK(!terms.empty(), "{}: no terms to sum", op);
  const LinearKernel& first = terms.front();
  check_float_tensor(op, "term 0 weight", first.weight);
  const DType dtype = first.weight.dtype();
  const std::int64_t n = first.weight.dim() == 2 ? first.weight.size(first.feature_axis) : 0;
  std::vector<double> w(idx(first.weight.numel()));
  std::vector<double> b(idx(n));
  bool any_bias = false;
  for (std::size_t t = 0; t < terms.size(); ++t) {
    const LinearKernel& term = terms[t];
    const std::string name = fmt::format("term {}", t);
    check_float_tensor(op, name + " weight", term.weight);
    REFOLD_CHECK(term.weight.sizes() == first.weight.sizes() &&
                     term.feature_axis == first.feature_axis && first.weight.dim() == 2,
                 "{}: {} has weight [{}] with features on axis {}, term 0 [{}] on axis {}", op,
                 name, fmt::join(term.weight.sizes(), ", "), term.feature_axis,
                 fmt::join(first.weight.sizes(), ", "), first.feature_axis);
    check_same_dtype(op, name + " weight", term.weight, dtype, "term 0");
    const std::vector<double> wt = values_of(term.weight);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] += wt[i];
    if (term.bias.defined()) {
      check_vector(op, name + " bias", term.bias, n, dtype);
      any_bias = true;
      const std::vector<double> bt = values_of(term.bias);
      for (std::size_t o = 0; o < b.size(); ++o) b[o] += bt[o];
    }
  }
  return {make_tensor(w, first.weight.sizes(), dtype),
          any_bias ? make_tensor(b, {n}, dtype) : Tensor{}, first.feature_axis};
}

// ---- padding and alignment -----------------------------------------------------------------

// W'[o, c, (K_h − kh)/2 + i, (K_w − kw)/2 + j] = W[o, c, i, j].
ConvKernel pad_kernel_to(const ConvKernel& kernel, Size2d target) {
  constexpr std::string_view op = "pad_kernel_to";
  check_conv(op, "kernel", kernel);
  check_kernel_size(op, target);
  const Size2d k = kernel.kernel_size();
  REFOLD_CHECK(target.h >= k.h && target.w >= k.w,
               "{}: target {}x{} is smaller than the kernel {}x{}", op, target.h, target.w, k.h,
               k.w);
  REFOLD_CHECK((target.h - k.h) % 2 == 0 && (target.w - k.w) % 2 == 0,
               "{}: a {}x{} kernel cannot be centered in {}x{}: (K - k) must be even per axis "
               "(got {} and {})",
               op, k.h, k.w, target.h, target.w, target.h - k.h, target.w - k.w);
  const std::int64_t top = (target.h - k.h) / 2, left = (target.w - k.w) / 2;
  const std::int64_t planes = kernel.weight.size(0) * kernel.weight.size(1);
  const std::vector<double> w = values_of(kernel.weight);
  std::vector<double> padded =
      zero_weight(op, kernel.weight.size(0), kernel.weight.size(1), target);
  for (std::int64_t p = 0; p < planes; ++p)
    for (std::int64_t i = 0; i < k.h; ++i)
      for (std::int64_t j = 0; j < k.w; ++j)
        padded[idx((p * target.h + top + i) * target.w + left + j)] =
            w[idx((p * k.h + i) * k.w + j)];
  return {make_tensor(padded, {kernel.weight.size(0), kernel.weight.size(1), target.h, target.w},
                      kernel.weight.dtype()),
          kernel.bias.defined() ? kernel.bias.clone(MemoryFormat::Contiguous) : Tensor{},
          kernel.groups};
}

// Output row y reads input rows y·stride − P_top + d·i (i < K) in the big branch, and
// y·stride − p_top + d·i' (i' < k) in the small one; centering puts i' at i = i' + (K − k)/2,
// so the rows coincide iff P_top − p_top = d·(K − k)/2, and the output sizes agree iff the
// same holds at the bottom. Likewise for columns.
void check_branch_alignment(Size2d kernel, const Padding2d& padding, Size2d target_kernel,
                            const Padding2d& target_padding, Size2d dilation) {
  constexpr std::string_view op = "check_branch_alignment";
  check_kernel_size(op, kernel);
  check_kernel_size(op, target_kernel);
  REFOLD_CHECK(dilation.h > 0 && dilation.w > 0, "{}: dilation ({}, {}) must be positive", op,
               dilation.h, dilation.w);
  const Pads2d p = padding.resolve(kernel, dilation);
  const Pads2d P = target_padding.resolve(target_kernel, dilation);
  for (const std::int64_t v : {p.top, p.left, p.bottom, p.right, P.top, P.left, P.bottom, P.right})
    REFOLD_CHECK(v >= 0, "{}: padding must be non-negative, got {} and {}", op, pads_text(p),
                 pads_text(P));
  const auto mismatch = [&](std::string_view why) {
    fail(
        "branch mismatch: a {}x{} branch with padding {} does not center in a {}x{} branch with "
        "padding {} (dilation ({}, {})): {}",
        kernel.h, kernel.w, pads_text(p), target_kernel.h, target_kernel.w, pads_text(P),
        dilation.h, dilation.w, why);
  };
  const std::int64_t dh = target_kernel.h - kernel.h, dw = target_kernel.w - kernel.w;
  if (dh < 0 || dw < 0) mismatch("the branch kernel is larger than the target");
  if (dh % 2 != 0 || dw % 2 != 0) mismatch("(K - k) must be even per axis");
  const std::int64_t need_h = dilation.h * dh / 2, need_w = dilation.w * dw / 2;
  if (P.top - p.top != need_h || P.bottom - p.bottom != need_h)
    mismatch(fmt::format("rows need P - p = d*(K - k)/2 = {}, got {} (top) and {} (bottom)", need_h,
                         P.top - p.top, P.bottom - p.bottom));
  if (P.left - p.left != need_w || P.right - p.right != need_w)
    mismatch(fmt::format("columns need P - p = d*(K - k)/2 = {}, got {} (left) and {} (right)",
                         need_w, P.left - p.left, P.right - p.right));
}

// ---- kernels built from scratch ------------------------------------------------------------

// W[i, i mod (C/g), K_h/2, K_w/2] = 1.
ConvKernel identity_kernel(std::int64_t channels, std::int64_t groups, Size2d kernel, DType dtype) {
  constexpr std::string_view op = "identity_kernel";
  check_per_channel_kernel(op, channels, groups, kernel);
  REFOLD_CHECK(kernel.h % 2 == 1 && kernel.w % 2 == 1,
               "{}: kernel {}x{} must be odd on both axes (an even kernel has no centre tap)", op,
               kernel.h, kernel.w);
  check_float_dtype(op, dtype);
  const std::int64_t per_group = channels / groups;
  std::vector<double> w = zero_weight(op, channels, per_group, kernel);
  for (std::int64_t i = 0; i < channels; ++i)
    w[idx(((i * per_group + i % per_group) * kernel.h + kernel.h / 2) * kernel.w + kernel.w / 2)] =
        1.0;
  return {make_tensor(w, {channels, per_group, kernel.h, kernel.w}, dtype), Tensor{}, groups};
}

ConvKernel identity_with_batch_norm(std::int64_t channels, std::int64_t groups, Size2d kernel,
                                    const BatchNormParams& bn) {
  constexpr std::string_view op = "identity_with_batch_norm";
  check_float_tensor(op, "running_var", bn.running_var);
  return fold_batch_norm(identity_kernel(channels, groups, kernel, bn.running_var.dtype()), bn);
}

// W[o, o mod (C/g), :, :] = 1/(K_h·K_w).
ConvKernel avg_pool_kernel(std::int64_t channels, std::int64_t groups, Size2d kernel, DType dtype) {
  constexpr std::string_view op = "avg_pool_kernel";
  check_per_channel_kernel(op, channels, groups, kernel);
  check_float_dtype(op, dtype);
  const std::int64_t per_group = channels / groups;
  const std::int64_t taps = checked_mul(kernel.h, kernel.w, op);
  std::vector<double> w = zero_weight(op, channels, per_group, kernel);
  for (std::int64_t o = 0; o < channels; ++o) {
    const std::size_t base = idx((o * per_group + o % per_group) * taps);
    for (std::int64_t t = 0; t < taps; ++t) w[base + idx(t)] = 1.0 / static_cast<double>(taps);
  }
  return {make_tensor(w, {channels, per_group, kernel.h, kernel.w}, dtype), Tensor{}, groups};
}

ConvKernel bias_only_kernel(const Tensor& bias, std::int64_t in_channels, std::int64_t groups,
                            Size2d kernel) {
  constexpr std::string_view op = "bias_only_kernel";
  check_float_tensor(op, "bias", bias);
  REFOLD_CHECK(bias.dim() == 1 && bias.size(0) > 0,
               "{}: bias must be 1-d [out_channels] with out_channels > 0, got {}", op,
               bias.description());
  check_groups(op, groups);
  const std::int64_t out = bias.size(0);
  REFOLD_CHECK(in_channels > 0, "{}: in_channels ({}) must be positive", op, in_channels);
  REFOLD_CHECK(in_channels % groups == 0 && out % groups == 0,
               "{}: groups ({}) must divide in_channels ({}) and out_channels ({})", op, groups,
               in_channels, out);
  check_kernel_size(op, kernel);
  const std::vector<double> w = zero_weight(op, out, in_channels / groups, kernel);
  return {make_tensor(w, {out, in_channels / groups, kernel.h, kernel.w}, bias.dtype()),
          make_tensor(values_of(bias), {out}, bias.dtype()), groups};
}

// ---- combining branches --------------------------------------------------------------------

// W = Σ W_i, b = Σ b_i (a missing bias is 0).
ConvKernel sum_branches(const std::vector<ConvKernel>& branches) {
  constexpr std::string_view op = "sum_branches";
  REFOLD_CHECK(!branches.empty(), "{}: no branches to sum", op);
  const ConvKernel& first = branches.front();
  check_conv(op, "branch 0", first);
  const DType dtype = first.weight.dtype();
  const std::int64_t out = first.out_channels();
  std::vector<double> w(idx(first.weight.numel()));
  std::vector<double> b(idx(out));
  bool any_bias = false;
  for (std::size_t n = 0; n < branches.size(); ++n) {
    const ConvKernel& k = branches[n];
    const std::string name = fmt::format("branch {}", n);
    check_conv(op, name, k);
    REFOLD_CHECK(k.groups == first.groups, "{}: {} has groups {} but branch 0 has {}", op, name,
                 k.groups, first.groups);
    REFOLD_CHECK(k.weight.sizes() == first.weight.sizes(),
                 "{}: {} has weight [{}] but branch 0 has [{}] (pad kernels to one size first)", op,
                 name, fmt::join(k.weight.sizes(), ", "), fmt::join(first.weight.sizes(), ", "));
    check_same_dtype(op, name + " weight", k.weight, dtype, "branch 0");
    const std::vector<double> wk = values_of(k.weight);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] += wk[i];
    if (k.bias.defined()) {
      any_bias = true;
      const std::vector<double> bk = values_of(k.bias);
      for (std::size_t o = 0; o < b.size(); ++o) b[o] += bk[o];
    }
  }
  return {make_tensor(w, first.weight.sizes(), dtype),
          any_bias ? make_tensor(b, {out}, dtype) : Tensor{}, first.groups};
}

// Per group g (m, c, o local to it; M_g = M/g, C_g = C/g):
//   W[o, c, i, j] = Σ_m W2[o, m, i, j] · W1[g·M_g + m, c]
//   b[o] = b2[o] + Σ_{m, i, j} W2[o, m, i, j] · b1[g·M_g + m]
// because conv2(pad_b1(conv1(x))) at output o sums W2[o, m, i, j]·(Σ_c W1[m, c]·x[c] + b1[m])
// over the window, and the padded taps contribute W2·b1 exactly like x = 0 taps of the merge.
ConvKernel merge_sequential_1x1_kxk(const ConvKernel& first_1x1, const ConvKernel& second) {
  constexpr std::string_view op = "merge_sequential_1x1_kxk";
  check_conv(op, "first", first_1x1);
  check_conv(op, "second", second);
  REFOLD_CHECK(first_1x1.kernel_size() == Size2d(1, 1), "{}: the first conv must be 1x1, got {}x{}",
               op, first_1x1.weight.size(2), first_1x1.weight.size(3));
  REFOLD_CHECK(first_1x1.groups == second.groups, "{}: groups differ: first {}, second {}", op,
               first_1x1.groups, second.groups);
  const DType dtype = first_1x1.weight.dtype();
  check_same_dtype(op, "second weight", second.weight, dtype, "the first weight");
  const std::int64_t groups = second.groups;
  const std::int64_t mid = first_1x1.out_channels();
  REFOLD_CHECK(second.in_channels() == mid,
               "{}: the second conv expects {} input channels ({} per group x {} groups), the "
               "first produces {}",
               op, second.in_channels(), second.weight.size(1), groups, mid);

  const std::int64_t out = second.out_channels(), kh = second.weight.size(2),
                     kw = second.weight.size(3);
  const std::int64_t mid_g = mid / groups, in_g = first_1x1.weight.size(1), out_g = out / groups,
                     taps = kh * kw;
  const std::vector<double> w1 = values_of(first_1x1.weight);  // [M, C_g]
  const std::vector<double> w2 = values_of(second.weight);     // [O, M_g, kh, kw]
  const std::vector<double> b1 = bias_or_zero(first_1x1.bias, mid);
  std::vector<double> b = bias_or_zero(second.bias, out);
  std::vector<double> w = zero_weight(op, out, in_g, {kh, kw});  // [O, C_g, kh, kw]
  for (std::int64_t o = 0; o < out; ++o) {
    const std::int64_t g = o / out_g;
    for (std::int64_t m = 0; m < mid_g; ++m) {
      const std::int64_t mg = g * mid_g + m;  // the first conv's output channel
      const std::size_t w2_base = idx((o * mid_g + m) * taps);
      for (std::int64_t t = 0; t < taps; ++t) {
        const double w2v = w2[w2_base + idx(t)];
        b[idx(o)] += w2v * b1[idx(mg)];
        for (std::int64_t c = 0; c < in_g; ++c)
          w[idx((o * in_g + c) * taps + t)] += w2v * w1[idx(mg * in_g + c)];
      }
    }
  }
  const bool has_bias = first_1x1.bias.defined() || second.bias.defined();
  return {make_tensor(w, {out, in_g, kh, kw}, dtype),
          has_bias ? make_tensor(b, {out}, dtype) : Tensor{}, groups};
}

}  // namespace refold::reparam
