// The kernel algebra of structural re-parameterization (RepVGG, ACNet, DBB, MobileOne,
// QARepVGG, RepConv), written once. Both faces of refold use it: the blocks'
// reparameterize() and the ONNX graph pass that finds the same patterns.
//
// The idea (seed 004): convolution is linear in its kernel, so parallel branches that see the
// same input with aligned windows add up to ONE convolution whose kernel and bias are the sums
// of theirs. Everything else here rewrites a branch into that common form:
//
//   conv → BN              fold_batch_norm               W' = W·s,  b' = (b − μ)·s + β
//   1×1, 1×3, 3×1 → K×K    pad_kernel_to                 zero border, centered
//   x (identity)           identity_kernel               a 1 at the centre, per group
//   avg_pool2d             avg_pool_kernel               1/(kh·kw) on the channel itself
//   1×1 → K×K (in series)  merge_sequential_1x1_kxk      per group W = W2·W1 (DBB)
//   branches in parallel   sum_branches                  W = Σ W_i,  b = Σ b_i
//   BN after the sum       fold_batch_norm(sum_branches(...), bn)           (QARepVGG)
//
// Example: a RepVGG block (3×3 conv+BN, 1×1 conv+BN, identity BN; stride 1, padding 1/0):
//
//   using namespace refold::reparam;
//   check_branch_alignment({1, 1}, 0, {3, 3}, 1);     // the 1×1 branch centers in the 3×3
//   ConvKernel fused = sum_branches({
//       fold_batch_norm(dense, dense_bn),
//       pad_kernel_to(fold_batch_norm(pointwise, pointwise_bn), {3, 3}),
//       fold_batch_norm(identity_kernel(channels, groups, {3, 3}, DType::Float32), id_bn)});
//   // fused.weight / fused.bias now belong to one Conv2d(k=3, padding=1, groups).
//
// Precision: every function reads its inputs, computes in double and rounds each result
// element once to the inputs' dtype (float32 or bfloat16; all operands must share it).
// Results are new, contiguous tensors; inputs are never modified.
// Errors: refold::Error, the message starting with the function's name and giving the values,
// e.g. "fold_batch_norm: running_var[3] = -0.5 is negative".
#pragma once

#include <cstdint>
#include <vector>

#include "refold/dtype.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::reparam {

// One convolution's parameters as a value: what a branch contributes to the fused conv.
// The geometry that is not in the tensors (stride, padding, dilation) belongs to the caller,
// who checks that branches agree on it (check_branch_alignment for the padding).
struct ConvKernel {
  Tensor weight;  // [out_channels, in_channels / groups, kh, kw] (torch.nn.Conv2d's layout)
  Tensor bias;    // [out_channels]; undefined means "no bias" (zero)
  std::int64_t groups = 1;

  std::int64_t out_channels() const { return weight.size(0); }
  std::int64_t in_channels() const { return weight.size(1) * groups; }
  Size2d kernel_size() const { return {weight.size(2), weight.size(3)}; }
};

// A transposed convolution's parameters. The weight axes are swapped relative to ConvKernel
// (torch.nn.ConvTranspose2d's layout), a different type so the two cannot be mixed up.
struct ConvTransposeKernel {
  Tensor weight;  // [in_channels, out_channels / groups, kh, kw]
  Tensor bias;    // [out_channels]; undefined means "no bias"
  std::int64_t groups = 1;

  std::int64_t in_channels() const { return weight.size(0); }
  std::int64_t out_channels() const { return weight.size(1) * groups; }
};

// BatchNorm in inference mode: y = (x − running_mean) / √(running_var + eps) · weight + bias.
// weight and bias may be undefined (affine=False: 1 and 0).
struct BatchNormParams {
  Tensor weight;        // γ [C]
  Tensor bias;          // β [C]
  Tensor running_mean;  // μ [C]
  Tensor running_var;   // σ² [C], each ≥ 0, σ² + eps ≠ 0
  double eps = 1e-5;
};

// A per-channel affine map y[o] = scale[o]·x[o] + shift[o] — BatchNorm in inference, or a Mul,
// Add, Sub, Div by a per-channel constant — in double, one value per channel (or one value for
// every channel).
struct ChannelAffine {
  std::vector<double> scale{1.0};
  std::vector<double> shift{0.0};
};

// BN in inference as that map: scale s = γ/√(σ² + ε), shift t = β − μ·s. Errors as
// fold_batch_norm's (a negative σ², σ² + ε == 0, parameters of different lengths or dtypes).
ChannelAffine batch_norm_affine(const BatchNormParams& bn);

// conv → BN as one conv. Per output channel o:
//   BN(conv(x))[o] = (W[o]∗x + b[o] − μ[o]) · s[o] + β[o],   s[o] = γ[o] / √(σ²[o] + ε)
//                  = (W[o]·s[o]) ∗ x + ((b[o] − μ[o]) · s[o] + β[o])
// so W'[o] = W[o]·s[o] and b'[o] = (b[o] − μ[o])·s[o] + β[o] (b = 0 when the conv has none).
// The result always has a bias. Errors name the channel of a negative σ² or of σ² + ε == 0.
ConvKernel fold_batch_norm(const ConvKernel& conv, const BatchNormParams& bn);

// conv_transpose → BN as one conv_transpose. Output channel o = g·(out/g) + j is produced by
// the weight slice W[g·(in/g) + i, j, :, :] for i < in/g, so the scale is applied along dim 1
// within each group:  W'[g·(in/g) + i, j] = W[g·(in/g) + i, j] · s[g·(out/g) + j],
// b'[o] = (b[o] − μ[o])·s[o] + β[o]. (Scaling dim 1 by s[j], as PyTorch's fuse_conv_bn_weights
// with transpose=True does, is right only for groups == 1.)
ConvTransposeKernel fold_batch_norm_into_conv_transpose(const ConvTransposeKernel& conv,
                                                        const BatchNormParams& bn);

// conv → per-channel affine as one conv (fact 2): W'[o] = W[o]·a[o], b'[o] = b[o]·a[o] + t[o].
// fold_batch_norm is this map with batch_norm_affine(bn).
ConvKernel fold_affine(const ConvKernel& conv, const ChannelAffine& affine);
// per-input-channel affine → conv as one conv (a BatchNorm before a 1×1 conv: NextViT's and
// MaxViT's pre-norms, MobileNetV4's attention): with c = g·(C/g) + i the input channel that
// weight slice [o, i] of output o's group g reads,
//   W'[o, i, :, :] = W[o, i, :, :]·a[c],   b'[o] = b[o] + Σ_{i, kh, kw} W[o, i, kh, kw]·t[c].
// Exact where every tap reads the input (a conv without padding) or where t = 0: a tap in the
// zero padding reads 0, not t — the caller checks that.
ConvKernel fold_affine_before_conv(const ConvKernel& conv, const ChannelAffine& affine);
// conv_transpose → per-channel affine, output channel o scaled on the slices BN folding scales.
ConvTransposeKernel fold_affine_into_conv_transpose(const ConvTransposeKernel& conv,
                                                    const ChannelAffine& affine);

// A matrix product with a constant 2-d operand (ONNX Gemm's B, MatMul's second input) and an
// optional bias: the features n (the output's last axis) run along `feature_axis` of the weight
// — 1 for W [K, N] (MatMul, Gemm with transB = 0), 0 for W [N, K] (Gemm with transB = 1).
struct LinearKernel {
  Tensor weight;  // 2-d
  Tensor bias;    // [N]; undefined means "no bias"
  std::int64_t feature_axis = 1;
};

// matmul → per-feature affine as one matmul: y[.., n] = Σ_k x[.., k]·W[k, n] + b[n], so
// a[n]·y[.., n] + t[n] has W'[k, n] = W[k, n]·a[n] and b'[n] = b[n]·a[n] + t[n]. The result has
// a bias.
LinearKernel fold_affine_into_linear(const LinearKernel& linear, const ChannelAffine& affine);

// per-feature affine → matmul as one matmul (a BatchNorm1d before a Linear, RepViT's and
// LeViT's heads): y[.., n] = Σ_k (a[k]·x[.., k] + t[k])·W[k, n] + b[n], so W'[k, n] =
// a[k]·W[k, n] and b'[n] = b[n] + Σ_k t[k]·W[k, n]. The affine has 1 or K values (K: the
// weight's dim that is not `feature_axis`). The result has a bias.
LinearKernel fold_affine_before_linear(const LinearKernel& linear, const ChannelAffine& affine);

// matmuls of one input summed (a classifier head and its distillation head):
// Σ_i (x·W_i + b_i) = x·(Σ_i W_i) + Σ_i b_i. Every term has the same weight shape and feature
// axis; the sum has a bias where any term has one.
LinearKernel sum_linear(const std::vector<LinearKernel>& terms);

// Zero-pads a kh×kw kernel (1×1, 1×3, 3×1, ...) centered into target.h × target.w:
//   W'[o, c, (K_h − kh)/2 + i, (K_w − kw)/2 + j] = W[o, c, i, j], 0 elsewhere.
// Requires target ≥ kernel and (K − k) even per axis (else the kernel cannot be centered).
// Equivalent to the original conv only when the paddings agree: see check_branch_alignment.
ConvKernel pad_kernel_to(const ConvKernel& kernel, Size2d target);

// Checks that a branch with a `kernel` window and `padding` reads the same input pixels as a
// `target_kernel` branch with `target_padding` (same stride and dilation d), so that
// pad_kernel_to(branch, target_kernel) is exact. Output pixel y of a branch reads input rows
// y·stride − P + d·i, i < K; after centering, the small kernel's row i sits at
// i + (K − k)/2, so the two windows coincide iff  P − p == d·(K − k)/2  on every side.
// Throws "branch mismatch: ..." naming the side, the kernels and the paddings otherwise.
void check_branch_alignment(Size2d kernel, const Padding2d& padding, Size2d target_kernel,
                            const Padding2d& target_padding, Size2d dilation = 1);

// The identity x ↦ x as a K_h×K_w conv with `groups` (in == out == channels, stride 1,
// padding (K − 1)/2): a 1 at the centre tap from each channel to itself. Channel i lies in
// group i / (C/g) at position i mod (C/g) within it, so
//   W[i, i mod (C/g), K_h/2, K_w/2] = 1, all else 0;  no bias.
// Requires K odd on both axes (an even kernel has no centre) and groups | channels.
ConvKernel identity_kernel(std::int64_t channels, std::int64_t groups, Size2d kernel,
                           DType dtype = DType::Float32);

// The identity branch with BatchNorm (RepVGG's rbr_identity):
//   fold_batch_norm(identity_kernel(C, groups, kernel, dtype of bn), bn).
ConvKernel identity_with_batch_norm(std::int64_t channels, std::int64_t groups, Size2d kernel,
                                    const BatchNormParams& bn);

// Parallel branches over the same input with aligned windows (same kernel size, groups,
// stride, dilation, padding — the caller's part) add up:
//   Σ_i (W_i ∗ x + b_i) = (Σ_i W_i) ∗ x + Σ_i b_i.
// A missing bias counts as zero; the result has a bias iff some branch has one.
ConvKernel sum_branches(const std::vector<ConvKernel>& branches);

// A 1×1 conv (W1 [M, C/g, 1, 1], b1 [M]) followed by a kh×kw conv (W2 [O, M/g, kh, kw], b2 [O]),
// both with `groups` g, as one kh×kw conv [O, C/g, kh, kw] (DBB's transIII_1x1_kxk). Within a
// group, with m and c the channels local to it:
//   W[o, c, i, j] = Σ_m W2[o, m, i, j] · W1[m, c]
//   b[o]          = b2[o] + Σ_{m, i, j} W2[o, m, i, j] · b1[m]
// Border precondition: the second conv must see b1 (the first conv's output for a zero input)
// in its padding, not zeros — DBB pads with its BNAndPad layer. The merged conv, applied with
// the same stride and padding to the ZERO-padded input, is then exact. With zero padding the
// merge is exact only in the interior. The first conv must have stride 1 and no padding.
ConvKernel merge_sequential_1x1_kxk(const ConvKernel& first_1x1, const ConvKernel& second);

// avg_pool2d (kernel K_h×K_w, any stride and padding, count_include_pad=true, ceil_mode=false,
// no divisor_override) as a conv with the same stride and padding over `channels` channels and
// `groups`: each output channel averages only its own input channel, which sits at position
// o mod (C/g) of its group:
//   W[o, o mod (C/g), :, :] = 1 / (K_h·K_w), all else 0;  no bias.
// For groups == 1 the kernel is diagonal in channels; for depthwise it is [C, 1, K_h, K_w].
ConvKernel avg_pool_kernel(std::int64_t channels, std::int64_t groups, Size2d kernel,
                           DType dtype = DType::Float32);

// A branch that only adds a per-channel constant (a learnable shift, or BatchNorm over a
// constant input): zero weight [O, in/g, kh, kw] with bias `bias` [O], so that it can join
// sum_branches like any other branch.
ConvKernel bias_only_kernel(const Tensor& bias, std::int64_t in_channels, std::int64_t groups,
                            Size2d kernel);

}  // namespace refold::reparam
