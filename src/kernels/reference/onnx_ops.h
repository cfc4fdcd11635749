// Reference kernels for the ONNX ops that PyTorch's modules do not cover (refold/reference.h
// holds the rest): arithmetic on float32/bfloat16 AND int64 (ONNX shape arithmetic), Clip,
// HardSigmoid with ONNX's alpha/beta, pooling of any spatial rank with ONNX's asymmetric pads and
// ceil_mode, Conv and ConvTranspose of 1–3 spatial axes with per-side pads, Gemm and MatMul.
// Plain loops over logical indices, any strides, computed in double (int64 in int64), like the
// rest of the reference; the output keeps the (first full-size) input's format.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/reference/col2im.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::reference {

// PRelu: a < 0 ? b·a : a. Mod: the remainder with the divisor's sign (Python's %, ONNX fmod = 0,
// int64 only); FMod: with the dividend's sign (C's fmod, ONNX fmod = 1).
enum class ArithOp { Add, Sub, Mul, Div, Pow, Max, Min, PRelu, Mod, FMod };

// NumPy-broadcast a ∘ b. Both operands have one dtype: float32, bfloat16 or int64.
// int64 wraps on overflow (two's complement, as NumPy) and Div truncates toward zero (ONNX's
// C-style integer division); an int64 division by zero is an error. Max/Min propagate NaN.
Tensor arith(const Tensor& a, const Tensor& b, ArithOp op);
const char* arith_name(ArithOp op);  // "Add", "Sub", …, the ONNX op

// min(max(x, lo), hi) for whichever bound is given; NaN stays NaN. float32/bfloat16/int64.
Tensor clip(const Tensor& x, std::optional<double> lo, std::optional<double> hi);

// ONNX HardSigmoid: max(0, min(1, alpha·x + beta)).
Tensor hard_sigmoid(const Tensor& x, double alpha, double beta);

// ONNX MaxPool / AveragePool on [N, C, D_1, …, D_r] (any r ≥ 1) with explicit per-side pads.
// Per spatial axis:
//   out = floor or ceil((in + pad_begin + pad_end − dilation·(k − 1) − 1) / stride) + 1
// A window reads input positions start + j·dilation (start = o·stride − pad_begin) that fall
// inside the input. Average divides by the positions inside the input (count_include_pad
// false) or inside the padded input [−pad_begin, in + pad_end) (true).
struct PoolParams {
  bool max = true;
  std::vector<std::int64_t> kernel, stride, dilation, pad_begin, pad_end;  // one per axis
  bool ceil_mode = false;
  bool count_include_pad = false;
};
// The output size of one axis (the formula above); throws when it is below 1, or when
// ceil_mode makes the last window start in the end padding (ONNX versions disagree there).
std::int64_t onnx_pool_output_size(std::int64_t in, std::int64_t kernel, std::int64_t stride,
                                   std::int64_t dilation, std::int64_t pad_begin,
                                   std::int64_t pad_end, bool ceil_mode);
// MaxPool's Indices (when `indices` is given; max only): int64 of the output's shape, the flat
// position of each maximum in X seen as a contiguous [N, C, D_1, …] tensor, the spatial part
// row-major (storage_order 0) or column-major (`column_major`, storage_order 1); the first
// maximum in window order; −1 for a window wholly in the padding.
Tensor pool(const Tensor& input, const PoolParams& params, Tensor* indices = nullptr,
            bool column_major = false);

// ONNX Conv and ConvTranspose on X [N, C, D_1, …, D_r] (r = 1, 2 or 3 spatial axes) with
// per-side pads; W [M, C/group, k_1, …, k_r] for the conv, [C, M/group, k_1, …, k_r] (PyTorch's
// and ONNX's transposed layout) for conv_transpose_nd; bias [M] or undefined. Per spatial axis:
//   conv:       out = ⌊(in + pad_begin + pad_end − dilation·(k − 1) − 1) / stride⌋ + 1 ≥ 1,
//               pads ≥ 0
//   transposed: out = stride·(in − 1) + dilation·(k − 1) + 1 + output_padding − pad_begin
//               − pad_end ≥ 1; pads of any sign (a negative one extends the output there with
//               positions no tap reaches: the bias alone), output_padding ≥ 0
// The output is contiguous; float32 or bfloat16 operands of one dtype.
struct ConvNdParams {
  std::vector<std::int64_t> stride, dilation, pad_begin, pad_end;  // one per spatial axis
  std::vector<std::int64_t> output_padding;  // conv_transpose_nd only; empty reads as zeros
  std::int64_t groups = 1;
};
Tensor conv_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
               const ConvNdParams& params);
Tensor conv_transpose_nd(const Tensor& input, const Tensor& weight, const Tensor& bias,
                         const ConvNdParams& params);

// ONNX Col2Im (kernels/reference/col2im.h has the math): X [N, C·∏k_a, ∏L_a] to the image
// [N, C, D_1, …, D_r], r ≥ 1. check_col2im validates X and the parameters against each other and
// returns the sizes both kernels work with; the output is contiguous, of X's dtype (float32 or
// bfloat16).
Col2ImExtent check_col2im(const Tensor& x, const Col2ImParams& params);
Tensor col2im(const Tensor& x, const Col2ImParams& params);

// ONNX Gemm: alpha · A' · B' + beta · C, A' = transA ? Aᵀ : A ([M, K]), B' likewise ([K, N]),
// C (optional) broadcast to [M, N].
Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta,
            bool trans_a, bool trans_b);

// ONNX Reduce*: y = ⊕ over `axes` (each in [−rank, rank), none repeated; empty = none) of x,
// keepdims keeping the reduced axes as size 1. Float32/bfloat16; Sum, Prod, Max and Min also
// int64 (exact, wrapping). Over no elements: Mean NaN, Sum 0, Prod 1, Max −inf, Min +inf,
// LogSum and LogSumExp −inf. Max/Min propagate NaN.
enum class ReduceOp { Mean, Sum, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };
const char* reduce_name(ReduceOp op);  // "ReduceMean", …
// The result from the accumulated value of `count` elements (Σx, Σx², Σ|x|, the extreme):
// Mean divides, L2 takes the square root, LogSum the log; the others are the value itself.
double reduce_finish(ReduceOp op, double acc, std::int64_t count);
Tensor reduce(const Tensor& input, const std::vector<std::int64_t>& axes, bool keepdims,
              ReduceOp op);
// ONNX ArgMax (max) / ArgMin: int64 indices along `axis`; ties give the first index, or the
// last with select_last_index; NaN is both the largest and the smallest (NumPy's rule).
Tensor arg_reduce(const Tensor& input, std::int64_t axis, bool keepdims, bool select_last,
                  bool max);

// ONNX's element-wise math functions, y = f(x; alpha, beta) (the formulas in unary.cpp). Abs,
// Neg and Sign also take int64 (exact); every other one float32/bfloat16.
enum class UnaryOp {
  Abs,
  Neg,
  Sign,
  Floor,
  Ceil,
  Round,
  Reciprocal,
  Sqrt,
  Exp,
  Log,
  Erf,
  Tanh,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  Softplus,
  Softsign,
  Mish,
  Gelu,
  GeluTanh,
  Elu,              // alpha
  Selu,             // alpha, beta = gamma
  Celu,             // alpha
  ThresholdedRelu,  // alpha
  Pow,              // x^alpha (Pow with a scalar exponent)
};
std::string_view unary_name(UnaryOp op);  // the ONNX op's name ("GeluTanh" for tanh Gelu)
Tensor unary(const Tensor& x, UnaryOp op, double alpha = 0.0, double beta = 0.0);

// ONNX LayerNormalization: y = (x − μ) / √(σ² + ε) · scale + bias, μ and σ² over the dims
// [axis, rank); scale and bias (optional) broadcast to those dims. Also returns μ and 1/√(σ² + ε)
// (float32, x's shape with the normalized dims 1).
struct LayerNormResult {
  Tensor y, mean, inv_std_dev;
};
LayerNormResult layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias,
                           std::int64_t axis, double epsilon);
// ONNX GroupNormalization (opset 21 form; InstanceNormalization is groups = C): x [N, C, …],
// statistics per (n, group of C / groups channels) over those channels and all positions;
// scale and bias per channel.
Tensor group_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, std::int64_t groups,
                  double epsilon);
// ONNX BatchNormalization with training_mode=1 (opset 14+): normalizes x [N, C, …] by its own
// statistics per channel (mean and population variance over every dim but 1), then scale and B;
// also the running statistics, input_mean·momentum + mean·(1 − momentum) and the same for var.
struct BatchNormTrainingResult {
  Tensor y, running_mean, running_var;
};
BatchNormTrainingResult batch_norm_training(const Tensor& x, const Tensor& scale,
                                            const Tensor& bias, const Tensor& input_mean,
                                            const Tensor& input_var, double epsilon,
                                            double momentum);
// ONNX LRN across channels (see normalization.cpp for the window).
Tensor lrn(const Tensor& x, std::int64_t size, double alpha, double beta, double bias);

// ONNX Einsum (numpy.einsum). An equation "ij,jk->ik" names each input's dimensions by letters
// (a–z, A–Z) and at most one "..." per term for the leading dimensions it does not name (those
// broadcast across inputs, right-aligned); a letter repeated within a term takes that term's
// diagonal. The output lists its labels after "->", each at most once and each from some input;
// without "->" it is "..." then every label used exactly once, in ASCII order. Every label has one
// size wherever it appears; out = Σ over the labels not in the output of Π inputs.
struct EinsumEquation {
  std::vector<std::string> inputs;  // one term per input; "..." kept as '.'
  std::string output;
  bool explicit_output = false;
};
// Parses and validates `equation` for `n_inputs` inputs (the error names the equation).
EinsumEquation parse_einsum(const std::string& equation, std::size_t n_inputs);
// Each term's labels against the input shapes, "..." replaced by one label per broadcast
// dimension (kEllipsisLabel + k for the k-th of the output's ellipsis dimensions); checks ranks
// and sizes. `sizes` receives each label's size (indexed by label).
inline constexpr int kEllipsisLabel = 256;
struct EinsumLabels {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
  std::vector<std::int64_t> sizes;  // per label; 1 where an input broadcasts it
};
EinsumLabels einsum_labels(const EinsumEquation& equation, const std::vector<Shape>& shapes);
// The contraction in double, rounded once; float32/bfloat16 inputs of one dtype.
Tensor einsum(const EinsumEquation& equation, const std::vector<Tensor>& inputs);

// numpy.matmul: 1-d operands are promoted (and the added dim removed), batch dims broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

}  // namespace refold::reference
