#include "onnx/attributes.h"

#include <set>

#include "core/check.h"

namespace refold::onnx::detail {

using AP = ::onnx::AttributeProto;

graph::Attributes attributes_from_proto(const ::onnx::NodeProto& node,
                                        const TensorReadContext& context,
                                        std::vector<std::string>& unsupported) {
  const std::string& what = context.what;
  graph::Attributes out;
  std::set<std::string> seen;
  for (const AP& a : node.attribute()) {
    const std::string& name = a.name();
    REFOLD_CHECK(!name.empty(), "{}: attribute without a name", what);
    REFOLD_CHECK(seen.insert(name).second, "{}: duplicate attribute '{}'", what, name);
    REFOLD_CHECK(a.ref_attr_name().empty(),
                 "{}: attribute '{}' refers to function attribute '{}' (only valid inside a "
                 "function body)",
                 what, name, a.ref_attr_name());
    switch (a.type()) {
      case AP::FLOAT:
        out.set(name, a.f());
        break;
      case AP::INT:
        out.set(name, static_cast<std::int64_t>(a.i()));
        break;
      case AP::STRING:
        out.set(name, a.s());
        break;
      case AP::FLOATS:
        out.set(name, std::vector<float>(a.floats().begin(), a.floats().end()));
        break;
      case AP::INTS:
        out.set(name, std::vector<std::int64_t>(a.ints().begin(), a.ints().end()));
        break;
      case AP::STRINGS:
        out.set(name, std::vector<std::string>(a.strings().begin(), a.strings().end()));
        break;
      case AP::TENSOR: {
        TensorReadContext tensor_context = context;
        tensor_context.what = fmt::format("{}: attribute '{}'", what, name);
        out.set(name, tensor_from_proto(a.t(), tensor_context));
        break;
      }
      case AP::UNDEFINED:
        fail("{}: attribute '{}' has no type", what, name);
      default:
        unsupported.push_back(fmt::format("attribute '{}' of type {} unsupported", name,
                                          AP::AttributeType_IsValid(a.type())
                                              ? AP::AttributeType_Name(a.type())
                                              : std::to_string(static_cast<int>(a.type()))));
        break;
    }
  }
  return out;
}

AP attribute_to_proto(const std::string& name, const graph::AttributeValue& value) {
  AP a;
  a.set_name(name);
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t>) {
          a.set_type(AP::INT);
          a.set_i(v);
        } else if constexpr (std::is_same_v<T, float>) {
          a.set_type(AP::FLOAT);
          a.set_f(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          a.set_type(AP::STRING);
          a.set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
          a.set_type(AP::INTS);
          for (auto x : v) a.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<float>>) {
          a.set_type(AP::FLOATS);
          for (auto x : v) a.add_floats(x);
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          a.set_type(AP::STRINGS);
          for (const auto& x : v) a.add_strings(x);
        } else {
          a.set_type(AP::TENSOR);
          *a.mutable_t() = tensor_to_proto(v, "");
        }
      },
      value);
  return a;
}

}  // namespace refold::onnx::detail
