// ValueInfoProto ↔ graph::ValueInfo (tensor types only: elem_type and dims with dim_param).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "refold/graph/graph.h"

namespace refold::onnx::detail {

// `what` names the value in messages ("graph input 'x'"). Non-tensor types (sequence, map,
// optional, sparse) and negative dim_value are errors.
graph::ValueInfo value_info_from_proto(const ::onnx::ValueInfoProto& proto,
                                       const std::string& what);

// True when `proto` is a tensor type that value_info_from_proto turns into exactly `info`.
bool same_value_info(const ::onnx::ValueInfoProto& proto, const graph::ValueInfo& info);

::onnx::ValueInfoProto value_info_to_proto(const graph::ValueInfo& info);

}  // namespace refold::onnx::detail
