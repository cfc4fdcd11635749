#include "onnx/value_info.h"

#include "core/check.h"

namespace refold::onnx::detail {

graph::ValueInfo value_info_from_proto(const ::onnx::ValueInfoProto& proto,
                                       const std::string& what) {
  graph::ValueInfo info;
  info.name = proto.name();
  if (!proto.has_type()) {  // allowed for value_info; the type is then unknown
    info.elem_type = 0;
    return info;
  }
  REFOLD_CHECK(proto.type().has_tensor_type(),
               "{}: only tensor types are supported (got a sequence, map, optional or sparse "
               "type)",
               what);
  const auto& tensor = proto.type().tensor_type();
  info.elem_type = tensor.elem_type();
  if (!tensor.has_shape()) return info;
  std::vector<graph::Dim> dims;
  for (const auto& d : tensor.shape().dim()) {
    graph::Dim dim;
    if (d.has_dim_value()) {
      REFOLD_CHECK(d.dim_value() >= 0, "{}: negative dim {} in its declared shape", what,
                   d.dim_value());
      dim.value = d.dim_value();
    } else if (d.has_dim_param()) {
      dim.param = d.dim_param();
    }
    dims.push_back(std::move(dim));
  }
  info.shape = std::move(dims);
  return info;
}

bool same_value_info(const ::onnx::ValueInfoProto& proto, const graph::ValueInfo& info) {
  if (proto.name() != info.name) return false;
  if (proto.has_type() && !proto.type().has_tensor_type()) return false;
  graph::ValueInfo converted;
  try {
    converted = value_info_from_proto(proto, "");
  } catch (const Error&) {
    return false;
  }
  if (converted.elem_type != info.elem_type ||
      converted.shape.has_value() != info.shape.has_value())
    return false;
  if (!info.shape) return true;
  if (converted.shape->size() != info.shape->size()) return false;
  for (std::size_t i = 0; i < info.shape->size(); ++i) {
    const graph::Dim& a = (*converted.shape)[i];
    const graph::Dim& b = (*info.shape)[i];
    if (a.value != b.value || a.param != b.param) return false;
  }
  return true;
}

::onnx::ValueInfoProto value_info_to_proto(const graph::ValueInfo& info) {
  ::onnx::ValueInfoProto proto;
  proto.set_name(info.name);
  if (info.elem_type == 0 && !info.shape) return proto;
  auto* tensor = proto.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(info.elem_type);
  if (info.shape) {
    auto* shape = tensor->mutable_shape();
    for (const graph::Dim& d : *info.shape) {
      auto* dim = shape->add_dim();
      if (d.value >= 0) {
        dim->set_dim_value(d.value);
      } else if (!d.param.empty()) {
        dim->set_dim_param(d.param);
      }
    }
  }
  return proto;
}

}  // namespace refold::onnx::detail
