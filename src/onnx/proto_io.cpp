#include "onnx/proto_io.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstring>
#include <exception>

#include "core/check.h"
#include "io/file.h"

namespace refold::onnx::detail {
namespace {

std::uint64_t read_le64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

template <typename Message>
bool parse_limited(std::span<const std::byte> bytes, Message& message) {
  // The caller has bounded bytes.size() below 2 GiB, so the int cast is exact.
  google::protobuf::io::CodedInputStream stream(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                                static_cast<int>(bytes.size()));
  stream.SetRecursionLimit(kRecursionLimit);
  return message.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage();
}

// A file read front to back, as protobuf's copying stream asks for it. A read that throws
// (the file shrank since it was opened) ends the stream with an error; the exception is kept for
// the caller, so none crosses protobuf's parser.
class SequentialFile final : public google::protobuf::io::CopyingInputStream {
 public:
  explicit SequentialFile(const io::InputFile& file) : file_(file) {}

  int Read(void* buffer, int size) override {
    const auto n = static_cast<std::size_t>(
        std::min<std::uint64_t>(static_cast<std::uint64_t>(size), file_.size() - offset_));
    try {
      file_.read_at(offset_, {static_cast<std::byte*>(buffer), n});
    } catch (...) {
      error_ = std::current_exception();
      return -1;
    }
    offset_ += n;
    return static_cast<int>(n);  // 0 at the end
  }

  void rethrow_error() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  const io::InputFile& file_;
  std::uint64_t offset_ = 0;
  std::exception_ptr error_;
};

}  // namespace

void check_file_size(const io::InputFile& file, std::uint64_t max_bytes) {
  REFOLD_CHECK(file.size() <= kMaxProtoBytes,
               "{}: file is {} bytes; protobuf cannot parse 2 GiB or more (store the weights as "
               "external data)",
               file.name(), file.size());
  REFOLD_CHECK(file.size() <= max_bytes, "{}: file is {} bytes, over the memory budget of {} bytes",
               file.name(), file.size(), max_bytes);
}

std::string guess_file_kind(std::span<const std::byte> bytes) {
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  // safetensors: 8-byte little-endian header length N, then N bytes of JSON starting with '{'.
  if (n >= 9 && u[8] == '{' && read_le64(bytes.data()) <= n - 8) return "a safetensors file";
  if (n >= 3 && u[0] == 0xFF && u[1] == 0xD8 && u[2] == 0xFF) return "a JPEG image";
  if (n >= 8 && std::memcmp(u, "\x89PNG\r\n\x1a\n", 8) == 0) return "a PNG image";
  if (n >= 6 && std::memcmp(u, "\x93NUMPY", 6) == 0) return "a .npy array";
  if (n >= 2 && u[0] == 'P' && u[1] == 'K') return "a zip archive (a PyTorch .pt checkpoint?)";
  bool text = n > 0;
  for (std::size_t i = 0; i < std::min<std::size_t>(n, 512) && text; ++i) {
    text = u[i] == '\n' || u[i] == '\r' || u[i] == '\t' || (u[i] >= 0x20 && u[i] < 0x7F);
  }
  if (text) return "a text file";
  return "";
}

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path, std::uint64_t max_bytes,
                                       const std::string& what) {
  io::InputFile file(path, what);
  check_file_size(file, max_bytes);
  std::vector<std::byte> bytes(file.size());
  file.read_at(0, bytes);
  return bytes;
}

void parse_model_file(const io::InputFile& file, ::onnx::ModelProto& model) {
  {
    SequentialFile sequential(file);
    google::protobuf::io::CopyingInputStreamAdaptor blocks(&sequential, 1 << 20);
    google::protobuf::io::CodedInputStream stream(&blocks);
    stream.SetRecursionLimit(kRecursionLimit);
    if (model.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage()) return;
    sequential.rethrow_error();
  }
  // Not a model: the whole file, for parse_model's diagnosis of what it is instead.
  model.Clear();
  std::vector<std::byte> bytes(file.size());
  file.read_at(0, bytes);
  parse_model(bytes, model);
}

void parse_model(std::span<const std::byte> bytes, ::onnx::ModelProto& model) {
  REFOLD_CHECK(bytes.size() <= kMaxProtoBytes,
               "model is {} bytes; protobuf cannot parse 2 GiB or more (use external data)",
               bytes.size());
  if (parse_limited(bytes, model)) return;
  const std::string kind = guess_file_kind(bytes);
  if (!kind.empty())
    fail("not an ONNX model: the file looks like {} ({} bytes)", kind, bytes.size());
  fail("not an ONNX model: truncated/corrupt protobuf ({} bytes), or nested deeper than {} levels",
       bytes.size(), kRecursionLimit);
}

void parse_tensor(std::span<const std::byte> bytes, ::onnx::TensorProto& tensor) {
  REFOLD_CHECK(bytes.size() <= kMaxProtoBytes,
               "tensor file is {} bytes; protobuf cannot parse 2 GiB or more", bytes.size());
  if (parse_limited(bytes, tensor)) return;
  const std::string kind = guess_file_kind(bytes);
  if (!kind.empty())
    fail("not a TensorProto: the file looks like {} ({} bytes)", kind, bytes.size());
  fail("not a TensorProto: truncated/corrupt protobuf ({} bytes)", bytes.size());
}

}  // namespace refold::onnx::detail
