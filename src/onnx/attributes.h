// AttributeProto ↔ graph::AttributeValue.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "onnx/tensor_proto.h"
#include "refold/graph/graph.h"

namespace refold::onnx::detail {

// The node's attributes. Errors (naming `context.what`, the node): an empty or repeated name
// (docs/reliability.md B7), a missing type, a reference to a function attribute. Attributes refold
// cannot hold (GRAPH, GRAPHS, TENSORS, SPARSE_TENSOR(S), TYPE_PROTO(S)) are skipped and described
// in `unsupported`, so the importer can list them with the unsupported ops. TENSOR values are
// read like initializers (`context` gives the budget and the model folder).
graph::Attributes attributes_from_proto(const ::onnx::NodeProto& node,
                                        const TensorReadContext& context,
                                        std::vector<std::string>& unsupported);

::onnx::AttributeProto attribute_to_proto(const std::string& name,
                                          const graph::AttributeValue& value);

}  // namespace refold::onnx::detail
