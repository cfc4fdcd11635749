// The node-level contract every ONNX model promises, checked at load against ONNX's own op
// definitions (schema.h), as ONNX Runtime checks it (docs/reliability.md B11–B13):
//   - every attribute of a node is one its op version defines;
//   - every input's element type is one the op allows, and inputs that share a type variable
//     share a type (a float Conv with float16 weights, a float + float16 Add);
//   - a graph input that also has an initializer (its default) agrees with it;
//   - graph outputs and value_info carry the element type their producers compute.
// Element types are followed from the graph inputs, the initializers and Constant nodes
// through each op's type variables (and Cast's `to`); a type left open (an op whose output
// type no input or attribute fixes) is not checked further.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "onnx/validate.h"

namespace refold::onnx::detail {

// Throws refold::Error naming the node or value, the two types (or the attribute) and the rule.
// Returns the ONNX element type of every value it followed (value name → data_type).
std::map<std::string, int> check_types(const ::onnx::GraphProto& graph, int opset,
                                       const GraphPlan& plan);

}  // namespace refold::onnx::detail
