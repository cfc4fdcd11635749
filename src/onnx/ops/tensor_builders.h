// The builders behind tensor_ops() (tensor_ops.cpp), one family per file:
//   shape_builders.cpp   Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, DepthToSpace,
//                        Softmax
//   resize_builders.cpp  Resize
//   index_builders.cpp   Shape, Gather, Slice, Expand, ConstantOfShape, Range, ScatterND
//   value_builders.cpp   Constant, Cast, Equal, Where
// Each validates the node's attributes and constant inputs (docs/reliability.md F25–F27) and
// returns a graph::Op from src/graph/ops/ (nn::PixelShuffle where torch has the layer).
// Messages start with the problem and value; the importer prefixes the file and node.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "onnx/ops/builder.h"
#include "refold/tensor.h"

namespace refold::onnx::ops {

nn::ModulePtr build_reshape(const BuildContext& context);
nn::ModulePtr build_flatten(const BuildContext& context);
nn::ModulePtr build_squeeze(const BuildContext& context);
nn::ModulePtr build_unsqueeze(const BuildContext& context);
nn::ModulePtr build_transpose(const BuildContext& context);
nn::ModulePtr build_concat(const BuildContext& context);
nn::ModulePtr build_depth_to_space(const BuildContext& context);
nn::ModulePtr build_softmax(const BuildContext& context);
nn::ModulePtr build_resize(const BuildContext& context);
nn::ModulePtr build_shape(const BuildContext& context);
nn::ModulePtr build_gather(const BuildContext& context);
nn::ModulePtr build_slice(const BuildContext& context);
nn::ModulePtr build_expand(const BuildContext& context);
nn::ModulePtr build_constant_of_shape(const BuildContext& context);
nn::ModulePtr build_range(const BuildContext& context);
nn::ModulePtr build_scatter_nd(const BuildContext& context);
nn::ModulePtr build_constant(const BuildContext& context);
nn::ModulePtr build_cast(const BuildContext& context);
nn::ModulePtr build_equal(const BuildContext& context);
nn::ModulePtr build_where(const BuildContext& context);

// The constant behind input `i`, or nullopt when the input is absent or computed at run time.
std::optional<Tensor> constant_input(const BuildContext& context, std::size_t i);
// A constant int64 input's values (rank ≤ 1), or nullopt when it is not a constant.
std::optional<std::vector<std::int64_t>> constant_ints(const BuildContext& context, std::size_t i,
                                                       const char* what);
// The ONNX element type input `i` is declared with (a graph input or value_info), or 0 when
// nothing declares it (an activation's type is then only known at run time).
int declared_elem_type(const BuildContext& context, std::size_t i);

}  // namespace refold::onnx::ops
