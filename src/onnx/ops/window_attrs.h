// Reading and validating the attributes that Conv, ConvTranspose, MaxPool and AveragePool share
// (docs/reliability.md F1–F7): kernel_shape, strides, dilations, pads and auto_pad.
//
// refold runs these ops on 4-d tensors (2 spatial axes) only; an attribute whose length says
// 1-d or 3-d gives "unsupported: 3-d Conv …". Messages start with the problem; the importer puts
// the file and node in front.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "refold/graph/graph.h"
#include "refold/graph/ops/window.h"
#include "refold/op_options.h"
#include "refold/tensor.h"

namespace refold::onnx::ops {

struct WindowAttrs {
  std::optional<Size2d> kernel_shape;  // absent when the attribute is
  Size2d strides = 1;
  Size2d dilations = 1;
  graph::ops::WindowPadding padding;
};

// Validates and reads the attributes; `op` names the op in "unsupported: 3-d Conv".
// Checks: every length is the spatial rank (2), strides/dilations/kernel_shape > 0, pads ≥ 0,
// auto_pad one of NOTSET/VALID/SAME_UPPER/SAME_LOWER and not combined with non-zero pads.
WindowAttrs read_window_attrs(const graph::Node& node, const std::string& op);

// An ints attribute of exactly `count` values, or `fallback` when absent.
std::vector<std::int64_t> ints_of_length(const graph::Attributes& attrs, const std::string& name,
                                         std::size_t count, const std::string& op,
                                         const std::vector<std::int64_t>& fallback);

// "unsupported: N-d <op> …" unless `rank` (of a weight or input tensor) is 4.
void check_2d(std::int64_t rank, const std::string& op, const std::string& what);

// The node's input `i`, or "" when it has fewer inputs.
std::string input_name(const graph::Node& node, std::size_t i);
// True when input `i` is named and a constant of the graph.
bool is_constant_input(const graph::Graph& graph, const graph::Node& node, std::size_t i);
// Checks the number of inputs (min…max) and that only the first `max_outputs` outputs are used.
void check_arity(const graph::Node& node, std::size_t min_inputs, std::size_t max_inputs,
                 std::size_t max_outputs);
// A float32 or bfloat16 tensor, else an error naming `what`.
void check_floating(const Tensor& t, const std::string& what);

}  // namespace refold::onnx::ops
