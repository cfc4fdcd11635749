// refold's ONNX ops: what each op is, in one place (docs/adding-an-op.md).
//
// An op family lives in one file, src/ops/<family>.cpp, which holds for each of its ops
//   - the graph::Op that runs it (when no nn module does), its run() calling the kernels;
//   - its builder: the import, validating attributes and constant inputs (docs/reliability.md
//     section F) and returning the module that runs the node;
//   - its row in the family's table: op type, the first opset whose version refold implements,
//     builder, layout rule and, for an activation, how it fuses into a conv.
// The importer (src/onnx/load.cpp), the layout pass and activation fusion read the tables
// through find_op(); none keeps its own list of ops. Export writes a node's own data (op type,
// attributes, inputs), so an op needs no exporter of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/post_ops.h"
#include "refold/tensor.h"

namespace refold::ops {

struct BuildContext {
  const graph::Node& node;
  const graph::Graph& graph;  // constants so far: graph.is_constant(name)
  int opset = 0;              // the model's ai.onnx opset
};

using Builder = nn::ModulePtr (*)(const BuildContext& context);

// How memory formats pass through a node whose module accepts channels_last (a module that
// does not — Module::accepts_channels_last() — gets every input made contiguous and writes
// NCHW, whatever its rule; a conv's rule follows its weight, passes/layout.cpp).
enum class LayoutRule {
  FirstInput,    // the output keeps input 0's format (element-wise ops, pools, Pad, Resize…)
  Broadcasting,  // broadcasting arithmetic: the first input with the output's shape
                 // (reference::detail::layout_operand)
  AllInputs,     // NHWC iff every input is (Concat)
  Fresh,         // writes a new contiguous or non-4-d tensor (Reshape, Gemm, Shape, …)
  Permutation,   // Transpose: the input's format read through the perm (transposed_format)
};

// A conv's fused activation, as read from the activation's node: nullopt with `problem` empty
// when the node is not one, nullopt with `problem` set when it is one but cannot fuse (a Clip
// bound computed at run time, …).
struct FusedActivation {
  Activation activation = Activation::None;
  double negative_slope = 0.01;  // LeakyRelu
};
using ActivationReader = std::optional<FusedActivation> (*)(const graph::Graph& graph,
                                                            const graph::Node& node,
                                                            std::string& problem);

// What a node's output depends on, for static shape inference and constant folding
// (passes/known_values.h): whether running the op on stand-ins (zeros of the right shape) for
// its floating-point inputs gives the output's true shape, or even its true values.
enum class ShapeRule {
  // The output's shape follows from the inputs' shapes, the attributes and the values of the
  // non-floating (integer, bool) inputs; its values need every input's values. Most ops.
  Standard,
  // The output depends on its inputs' shapes only (Shape, Size): a static shape gives its values.
  InputShapesOnly,
  // The output's shape also depends on floating-point input values (Range's limits): known
  // only when every input is a constant.
  ReadsFloatValues,
  // The output's shape follows from the first input's shape and the other inputs' values
  // (Resize's scales or sizes, Upsample's scales): known when those others are constants.
  LaterInputsSetShape,
};

struct OpDef {
  const char* op_type;
  int min_opset;  // the lowest ai.onnx opset whose version of the op is implemented
  Builder build;
  LayoutRule layout = LayoutRule::FirstInput;
  ActivationReader as_activation = nullptr;  // set for ops a conv can run as a post-op
  ShapeRule shape = ShapeRule::Standard;
};

// True for the default domain ("" or "ai.onnx"), the only one refold runs.
bool is_ai_onnx(const graph::Node& node);

// The definition of an ai.onnx op type, or null when refold does not implement it.
const OpDef* find_op(const std::string& op_type);
// The definition behind a graph node: null for another domain or an unknown op type.
const OpDef* find_op(const graph::Node& node);

// The reason `node` cannot run (unknown op, domain, or an op version refold does not
// implement), or nullopt when a builder exists for it.
std::optional<std::string> unsupported_reason(const graph::Node& node, int opset);
// Validates the node and makes its module; throws refold::Error with the problem and value
// (the importer prefixes the file and node).
nn::ModulePtr build_module(const BuildContext& context);

// The family tables (one per src/ops/<family>.cpp), read by find_op().
const std::vector<OpDef>& activation_ops();
const std::vector<OpDef>& arithmetic_ops();
const std::vector<OpDef>& batch_norm_ops();
const std::vector<OpDef>& col2im_ops();
const std::vector<OpDef>& concat_ops();
const std::vector<OpDef>& conv_ops();
const std::vector<OpDef>& gemm_ops();
const std::vector<OpDef>& indexing_ops();
const std::vector<OpDef>& normalization_ops();
const std::vector<OpDef>& pad_ops();
const std::vector<OpDef>& pool_ops();
const std::vector<OpDef>& recurrent_ops();
const std::vector<OpDef>& reduce_ops();
const std::vector<OpDef>& reshape_ops();
const std::vector<OpDef>& resize_ops();
const std::vector<OpDef>& softmax_ops();
const std::vector<OpDef>& transpose_ops();
const std::vector<OpDef>& unary_ops();
const std::vector<OpDef>& values_ops();

// ---- what builders share ----

// The node's input `i`, or "" when it has fewer inputs.
std::string input_name(const graph::Node& node, std::size_t i);
// True when input `i` is named and a constant of the graph.
bool is_constant_input(const graph::Graph& graph, const graph::Node& node, std::size_t i);
// Checks the number of inputs (min…max) and that only the first `max_outputs` outputs are used;
// the first must be, unless `first_output_optional` (an LSTM read only for its Y_h).
void check_arity(const graph::Node& node, std::size_t min_inputs, std::size_t max_inputs,
                 std::size_t max_outputs, bool first_output_optional = false);
// A float32 or bfloat16 tensor, else an error naming `what`.
void check_floating(const Tensor& t, const std::string& what);
// The constant behind input `i`, or nullopt when the input is absent or computed at run time.
std::optional<Tensor> constant_input(const BuildContext& context, std::size_t i);
// A constant int64 input's values (rank ≤ 1), or nullopt when it is not a constant.
std::optional<std::vector<std::int64_t>> constant_ints(const BuildContext& context, std::size_t i,
                                                       const char* what);
// The ONNX element type input `i` is declared with (a graph input or value_info), or 0 when
// nothing declares it (an activation's type is then only known at run time).
int declared_elem_type(const BuildContext& context, std::size_t i);

}  // namespace refold::ops
