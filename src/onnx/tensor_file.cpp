// onnx::load_tensor / save_tensor: one TensorProto per .pb file, as the ONNX test folders store
// inputs and outputs. Read with the same checks as initializers (tensor_proto.h); external data
// resolves against the file's folder. BFLOAT16 stays bfloat16 (graph inputs declared BFLOAT16
// take bfloat16 tensors).
#include "core/check.h"
#include "io/file.h"
#include "onnx/proto_io.h"
#include "onnx/tensor_proto.h"
#include "refold/onnx/onnx.h"

namespace refold::onnx {

namespace {
constexpr std::uint64_t kMaxTensorFileBytes = detail::kMaxProtoBytes;
}  // namespace

Tensor load_tensor(const std::filesystem::path& file) { return load_tensor(file, 0); }

Tensor load_tensor(const std::filesystem::path& file, int declared_elem_type) {
  const std::vector<std::byte> bytes =
      detail::read_file_bytes(file, kMaxTensorFileBytes, "tensor file");
  try {
    ::onnx::TensorProto proto;
    detail::parse_tensor(bytes, proto);
    // numpy has no bfloat16: ONNX's test data stores bfloat16 values as their UINT16 bits.
    if (declared_elem_type == ::onnx::TensorProto::BFLOAT16 &&
        proto.data_type() == ::onnx::TensorProto::UINT16) {
      proto.set_data_type(::onnx::TensorProto::BFLOAT16);
    }
    std::filesystem::path dir = file.parent_path();
    if (dir.empty()) dir = ".";
    // The byte-count checks already bound the decoded tensor by the file's size (at most 8× it,
    // for int8/bool → int64); the budget is a second fence.
    std::uint64_t budget = std::uint64_t{8} << 30;
    detail::TensorReadContext context{fmt::format("tensor '{}'", proto.name()), dir, &budget};
    context.keep_bfloat16 = true;
    return detail::tensor_from_proto(proto, context);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", file.string(), e.what()));
  }
}

void save_tensor(const Tensor& tensor, const std::string& name, const std::filesystem::path& file) {
  std::string bytes;
  try {
    const ::onnx::TensorProto proto = detail::tensor_to_proto(tensor, name);
    REFOLD_CHECK(proto.ByteSizeLong() <= detail::kMaxProtoBytes,
                 "tensor '{}' is {} bytes, over protobuf's 2 GiB limit", name,
                 proto.ByteSizeLong());
    REFOLD_CHECK(proto.SerializeToString(&bytes), "protobuf serialization failed");
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", file.string(), e.what()));
  }
  io::AtomicFileWriter writer(file, "tensor file");
  writer.write(std::as_bytes(std::span(bytes.data(), bytes.size())));
  writer.commit();
}

}  // namespace refold::onnx
