// Reference kernels of the ONNX tensor and shape-arithmetic ops (the graph::ops modules call
// them; the constant folder runs them, so they are exact).
//
// Every kernel takes tensors of any rank and any strides and reads them by logical index.
// Data movement (concat, transpose, depth_to_space, gather, slice, expand, where, scatter_nd)
// copies elements bit for bit in the input's own dtype (float32, bfloat16 or int64); softmax and
// resize compute in double and round once to the input's dtype. Booleans are int64 0/1 (DType
// has no bool): compare() returns them, where() reads them.
//
// Output layout (the layout plan's rules, src/passes/layout.cpp): a 4-d output keeps
// channels_last when the first input suggests it and the op maps dimensions one to one
// (softmax, resize, slice, depth_to_space, cast, compare, scatter_nd; where follows its condition,
// or x when the condition broadcasts; concat when every input does); transpose, gather, expand,
// range and constant_of_shape write a fresh contiguous tensor.
//
// Errors are refold::Error starting with the kernel's name and the offending value, e.g.
//   "gather: index 7 out of range for axis 1 of size 3".
#pragma once

#include <cmath>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/tensor.h"

namespace refold::reference {

// Joins along `axis` (negative counts from the end); inputs share dtype, rank and every other
// dimension.
Tensor concat(const std::vector<Tensor>& inputs, std::int64_t axis);

// cat's output layout (PyTorch's cat_compute_output_memory_format): channels_last when every
// input is 4-d and suggests it, else contiguous — the one rule reference::cat, native::cat and
// functional::cat (which permutes the other inputs into it) follow.
MemoryFormat cat_output_format(const std::vector<Tensor>& inputs);
// out.sizes[k] = in.sizes[perm[k]]; an empty perm reverses the dimensions (ONNX default).
Tensor transpose(const Tensor& input, const Shape& perm);
// [N, C·b², H, W] → [N, C, H·b, W·b]:
//   DCR: out[n, c, h·b + i, w·b + j] = in[n, (i·b + j)·C + c, h, w]
//   CRD: out[n, c, h·b + i, w·b + j] = in[n, c·b² + i·b + j, h, w]   (= pixel_shuffle)
Tensor depth_to_space(const Tensor& input, std::int64_t blocksize, bool dcr);

// [N, C, H·b, W·b] → [N, C·b², H, W], DepthToSpace's DCR inverse:
//   out[n, (i·b + j)·C + c, h, w] = in[n, c, h·b + i, w·b + j]
Tensor space_to_depth(const Tensor& input, std::int64_t blocksize);
// ONNX Tile: out.sizes[d] = in.sizes[d] · repeats[d], out[i] = in[i mod in.sizes]; repeats ≥ 0,
// one per dimension.
Tensor tile(const Tensor& input, const std::vector<std::int64_t>& repeats);
// ONNX Pad over every dimension d: begin[d] / end[d] elements before / after (negative crops
// first). constant: `value`; reflect: mirrored without repeating the border (numpy 'reflect');
// edge: the border element repeated; wrap: the dimension repeated periodically. reflect, edge
// and wrap read the dimension after cropping and need it non-empty where they pad.
enum class PadMode { Constant, Reflect, Edge, Wrap };
// Position p (any integer) of a padded dimension of size m > 0 → the position it copies, in
// [0, m) (p itself inside; −1 for constant outside, which copies nothing).
std::int64_t pad_source(std::int64_t p, std::int64_t m, PadMode mode);
Tensor onnx_pad(const Tensor& input, const std::vector<std::int64_t>& begin,
                const std::vector<std::int64_t>& end, PadMode mode, double value = 0.0);
// ONNX Trilu over the last two dimensions [.., M, N]: keeps element (i, j) where j − i ≥ k
// (upper) or j − i ≤ k (lower), else 0.
Tensor trilu(const Tensor& input, std::int64_t k, bool upper);
// ONNX EyeLike: a [rows, cols] tensor of `dtype` with 1 where j − i = k, else 0.
Tensor eye(std::int64_t rows, std::int64_t cols, std::int64_t k, DType dtype);

// softmax along `axis`: out = exp(x − max) / Σ exp(x − max), the sums over that axis.
// LogSoftmax: log of it, x − max − log Σ exp(x − max); Hardmax: 1 at the first max, else 0.
enum class SoftmaxKind { Softmax, LogSoftmax, Hardmax };
Tensor softmax(const Tensor& input, std::int64_t axis, SoftmaxKind kind = SoftmaxKind::Softmax);
// ONNX Softmax before opset 13: the input seen as 2-d [prod(dims < axis), prod(dims ≥ axis)],
// softmax over each row; `axis` in [−rank, rank].
Tensor softmax_coerced_2d(const Tensor& input, std::int64_t axis,
                          SoftmaxKind kind = SoftmaxKind::Softmax);

enum class ResizeMode { Nearest, Linear, Cubic };
enum class NearestMode { RoundPreferFloor, RoundPreferCeil, Floor, Ceil };
enum class CoordinateMode {
  HalfPixel,
  Asymmetric,
  AlignCorners,
  PytorchHalfPixel,
  TfHalfPixelForNn,
  HalfPixelSymmetric
};
struct ResizeParams {
  ResizeMode mode = ResizeMode::Nearest;
  NearestMode nearest = NearestMode::RoundPreferFloor;
  CoordinateMode coordinates = CoordinateMode::HalfPixel;
  double cubic_coeff_a = -0.75;  // cubic only
  bool exclude_outside = false;  // linear and cubic
  bool antialias = false;        // linear and cubic, opset 18
};
// Resizes every dimension d from in.size(d) to out_sizes[d] with scale scales[d] and resized
// length lengths[d] (ONNX: scales given → length = in · scale, out = floor(length); sizes
// given → length = out, scale = out / in). For output coordinate x of a dimension, the input
// coordinate is
//   half_pixel           (x + 0.5) / scale − 0.5
//   pytorch_half_pixel   length > 1 ? (x + 0.5) / scale − 0.5 : −0.5
//   asymmetric           x / scale
//   tf_half_pixel_for_nn (x + 0.5) / scale
//   align_corners        length > 1 ? x · (in − 1) / (length − 1) : 0
//   half_pixel_symmetric (in / 2) · (1 − out / length) + (x + 0.5) / scale − 0.5 (opset 19:
//                        half_pixel, shifted so the output stays centred on the input)
// (the unfloored length, as the ONNX reference and its test_resize_*_align_corners goldens);
// nearest rounds it (nearest mode) and clamps to [0, in − 1]; linear interpolates between the
// two neighbours of the coordinate clamped to [0, in − 1], in every dimension (n-linear); cubic
// blends four neighbours per dimension with Keys' weights of coefficient cubic_coeff_a, reading
// the edge element outside the input (exclude_outside: weight 0 there, the rest renormalized).
// antialias, in a dimension that shrinks (scale < 1): the linear (triangle) or cubic filter is
// stretched by 1 / scale — weight f(scale · d) at distance d, over the 2·⌊support / scale⌋ or so
// inputs nearest the coordinate — and the weights normalized to sum 1 (ONNX's reference).
Tensor resize(const Tensor& input, const Shape& out_sizes, const std::vector<double>& scales,
              const std::vector<double>& lengths, const ResizeParams& params);

// GridSample (ONNX 16/20): samples X [N, C, D1…Dr] at the points of grid [N, O1…Or, r], whose
// last axis holds normalized coordinates in reverse axis order (x for the last axis first),
// −1 … 1 spanning the input: with align_corners the centres of the edge elements,
//   x = (g + 1) / 2 · (D − 1),
// else their outer edges, x = ((g + 1) · D − 1) / 2. Output [N, C, O1…Or].
//   nearest: x rounded half to even; linear: the 2^r neighbours ⌊x⌋, ⌊x⌋ + 1 weighted
//   1 − t, t (t = x − ⌊x⌋) per axis; cubic (r = 2): the 4 neighbours ⌊x⌋ − 1 … ⌊x⌋ + 2 with Keys'
//   weights, A = −0.75.
//   A coordinate outside [lo, hi] (align_corners: [0, D − 1], else [−0.5, D − 0.5]) is first
//   clamped to [0, D − 1] (border) or reflected into [lo, hi] (reflection); a neighbour outside
//   [0, D) then reads 0 (zeros), the edge (border) or its reflection (reflection).
// As ONNX's reference implementation: computed in double, rounded once to X's dtype.
enum class GridSampleMode { Nearest, Linear, Cubic };
enum class GridSamplePadding { Zeros, Border, Reflection };
struct GridSampleParams {
  GridSampleMode mode = GridSampleMode::Linear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool align_corners = false;
};
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleParams& params);

// out = data.sizes[:axis] + indices.sizes + data.sizes[axis+1:];
// out[i.., j.., k..] = data[i.., indices[j..], k..]; indices (int64) in [−size, size).
Tensor gather(const Tensor& data, const Tensor& indices, std::int64_t axis);
// What gather checks before it copies: the axis wrapped into [0, rank), every index wrapped into
// [0, size) (an error names the first out of range) and the output's sizes.
struct GatherIndices {
  std::int64_t axis = 0;
  std::vector<std::int64_t> values;
  Shape out_sizes;
};
GatherIndices gather_indices(const Tensor& data, const Tensor& indices, std::int64_t axis);

// ONNX GatherElements: out has indices' shape, out[i..] = data[i.. with i[axis] = indices[i..]];
// indices (int64) in [−size, size) of data's `axis`; every other dimension of indices at most
// data's.
Tensor gather_elements(const Tensor& data, const Tensor& indices, std::int64_t axis);
// ONNX ScatterElements: data copied, then for every index i.. of indices
//   out[i.. with i[axis] = indices[i..]] = updates[i..]   (none; the last write wins)
// or ⊕= updates[i..] with reduction add, mul, max or min, in index order; updates has indices'
// shape.
enum class ScatterReduction { None, Add, Mul, Max, Min };
Tensor scatter_elements(const Tensor& data, const Tensor& indices, const Tensor& updates,
                        std::int64_t axis, ScatterReduction reduction = ScatterReduction::None);

// One sliced dimension: element k of the output reads start + k·step, for k < count.
struct SliceDim {
  std::int64_t start = 0;
  std::int64_t step = 1;
  std::int64_t count = 0;
};
// ONNX Slice's clamping of (start, end, step) on a dimension of `size` (step ≠ 0):
//   negative start/end add size; then step > 0 clamps start, end to [0, size],
//   step < 0 clamps start to [0, size − 1] and end to [−1, size − 1];
//   count = max(0, ceil((end − start) / step)).
SliceDim resolve_slice(std::int64_t start, std::int64_t end, std::int64_t step, std::int64_t size);
// `dims` has one entry per input dimension.
Tensor slice(const Tensor& data, const std::vector<SliceDim>& dims);
// The elements slice() copies, as a view of data (strides step·stride), when every step is
// positive; undefined otherwise (a view has no negative strides). Same checks as slice().
Tensor slice_view(const Tensor& data, const std::vector<SliceDim>& dims);

// Broadcasts `input` to broadcast(input.sizes, shape) (ONNX Expand is bidirectional).
Tensor expand(const Tensor& input, const Shape& shape);
// out = condition ? x : y, broadcast; condition is int64 (0 false) or float (0 false).
Tensor where(const Tensor& condition, const Tensor& x, const Tensor& y);
// out = a ∘ b as int64 0/1, broadcast; a and b share dtype. And/Or/Xor read non-zero as true.
enum class CompareOp { Equal, Less, Greater, LessOrEqual, GreaterOrEqual, And, Or, Xor };
const char* compare_name(CompareOp op);  // the ONNX op: "Equal", "Less", …
Tensor compare(const Tensor& a, const Tensor& b, CompareOp op);
// ONNX Not: 1 where x is 0, else 0 (bool as int64).
Tensor logical_not(const Tensor& x);

// ONNX TensorProto element types Cast can produce. Bool and Int32 are stored as int64:
//   Bool: x ≠ 0 → 1, else 0 (NaN → 1, as numpy);  Int32: float truncated toward zero,
//   int64 wrapped to 32 bits (two's complement);  Int64: float truncated toward zero.
// A float → integer cast of NaN, ±Inf or a value outside the target range is an error.
enum class CastTarget { Float32, BFloat16, Int64, Int32, Bool };
Tensor cast(const Tensor& input, CastTarget target);
// The target of an ONNX element type (TensorProto.DataType): 1 float, 16 bfloat16, 7 int64,
// 6 int32, 9 bool; nullopt for any other. What Cast's `to` and EyeLike's `dtype` name.
std::optional<CastTarget> cast_target_of(std::int64_t onnx_type);
// The dtype a target is stored as: float32, bfloat16, or int64 for Int64, Int32 and Bool.
DType storage_dtype(CastTarget target);

// start, start + delta, … while below limit (delta > 0) / above limit (delta < 0); scalar
// inputs of one dtype; count = max(ceil((limit − start) / delta), 0). int64 exact; float32
// computes start + k·delta in float, as the ONNX reference does.
Tensor range(const Tensor& start, const Tensor& limit, const Tensor& delta);

// data copied, then data[indices[i.., :]] = updates[i..] for every i (reduction none);
// indices int64 [..., k] with k ≤ rank, entries in [−size, size); duplicate targets: the last
// write wins.
Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates);
// scatter_nd's checks of its arguments (refold::Error naming the problem), for other kernels.
void check_scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates);
// Where each row of checked indices [..., k] writes: Σ_j wrap(indices[row, j]) · strides[j], the
// element offset of data[indices[row], 0, ...] in an output of those strides; an index outside
// [−size, size) is a refold::Error naming it, its axis and the size.
std::vector<std::int64_t> scatter_nd_offsets(const Shape& data_sizes, const Shape& strides,
                                             const Tensor& indices);

// ONNX GatherND with b = batch_dims, k = indices.size(−1) (1 ≤ k ≤ rank(data) − b):
//   out.sizes = indices.sizes[:−1] + data.sizes[b + k:];
//   out[i.., rest..] = data[i[:b].., indices[i..], rest..], where the first b dims of i are the
//   batch dims data and indices share (equal sizes); indices (int64) in [−size, size).
Tensor gather_nd(const Tensor& data, const Tensor& indices, std::int64_t batch_dims);

// ONNX IsNaN / IsInf: int64 0/1 (bool) per element of a float32/bfloat16 x; IsInf detects
// +Inf when `positive` and −Inf when `negative`. Integer x: all 0.
Tensor is_nan(const Tensor& x);
Tensor is_inf(const Tensor& x, bool negative = true, bool positive = true);

// ONNX TopK along `axis`: the k largest (or smallest) elements, sorted (largest first, or
// smallest first), and their int64 indices; equal values keep the lower index first; NaN counts
// as larger than every number. 0 ≤ k ≤ size.
struct TopKResult {
  Tensor values, indices;
};
TopKResult top_k(const Tensor& x, std::int64_t k, std::int64_t axis, bool largest = true);
// ONNX CumSum along `axis`: out[j] = Σ x[i] over i ≤ j (exclusive: i < j; reverse: i ≥ j, or
// i > j). Float sums in double, rounded once per element; int64 exact (wrapping).
Tensor cum_sum(const Tensor& x, std::int64_t axis, bool exclusive = false, bool reverse = false);

// A tensor of `shape` filled with the single element of `value` (any dtype).
Tensor constant_of_shape(const Shape& shape, const Tensor& value);

namespace detail {

// Keys' cubic convolution kernel with coefficient a at distance x (support 2): Resize's cubic
// and antialiased-cubic weights (cubic_coeff_a) and GridSample's (a = −0.75).
inline double keys_cubic(double x, double a) {
  x = std::abs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

}  // namespace detail

}  // namespace refold::reference
