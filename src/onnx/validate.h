// Structural checks on a parsed ModelProto, before any tensor is read or module built.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <string>
#include <vector>

namespace refold::onnx::detail {

// Supported range (docs/reliability.md A6, A8). Any ai.onnx opset up to 21 is accepted here; which
// op versions refold implements is the op table's call (unsupported_reason, A9), so the
// pytorch-converted tests (opsets 6–9) load wherever their ops' versions are implemented.
// IR 9 to 14 (ONNX 1.13–1.23; PyTorch's dynamo exporter writes IR 10, onnx.helper.make_model of
// ONNX 1.23 IR 14) are read with the IR 8 schema of Debian's libonnx: what they add arrives as
// protobuf unknown fields, which export keeps. Those that change a node's meaning are refused
// (check_newer_ir_fields); the others — metadata_props on nodes, graphs, values and functions,
// IR 11's multi-device configurations (a placement, not a change to the math) — carry none and
// are kept as they are. Their new element types (4-bit, 2-bit and E8M0 floats) are refused by
// name where a tensor or value has one, like any type refold does not run.
inline constexpr int kMinIrVersion = 3;
inline constexpr int kMaxIrVersion = 14;
inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 21;

// A1/A2 (no graph), A6 (IR version), A7 (no or repeated opset_import), A8 (opset range).
// Returns the ai.onnx opset, or 0 when the model imports none and has no ai.onnx node.
int validate_header(const ::onnx::ModelProto& model);

struct GraphPlan {
  std::vector<std::string> node_names;  // per NodeProto index: its name, or "<OpType>_<index>"
  std::vector<std::size_t> order;       // NodeProto indices in a topological order
};

// B1–B7 and the node limit: a name for every node (unnamed ones get "<OpType>_<index>", a
// repeated name gets "_1", "_2", …), unique non-empty input/initializer names, single assignment
// (no value written twice, no node writing an input or initializer), every node input and graph
// output defined, and an order in which every value is written before it is read: the original
// order when it already is one, else a stable topological sort; a cycle is an error naming its
// nodes.
GraphPlan validate_graph(const ::onnx::GraphProto& graph, std::size_t max_nodes);

// Refuses a field of IR 9/10 that libonnx 1.12 does not know and that changes what a node
// computes: NodeProto.overload (field 8), which picks an overloaded model-local function.
void check_newer_ir_fields(const ::onnx::NodeProto& node, const std::string& name);

// "node 'conv1' (Conv)" or, for another domain, "node 'f' (com.microsoft.FusedConv)".
std::string describe_node(const std::string& name, const ::onnx::NodeProto& node);

}  // namespace refold::onnx::detail
