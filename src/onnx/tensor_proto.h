// TensorProto ↔ refold::Tensor, trusting nothing in the proto (docs/reliability.md section C).
//
// Element types (ONNX data_type → refold dtype):
//   FLOAT → float32; INT64 → int64;
//   INT32, INT16, INT8, UINT32, UINT16, UINT8, UINT64 (≤ 2^63−1) → int64 (exact);
//   BOOL → int64 0/1 (any non-zero byte is 1);
//   FLOAT16, BFLOAT16 → float32, widened exactly (every half and bfloat16 value, NaN and ±Inf
//     included, is a float32 value); refold computes in float32, and export writes an unchanged
//     initializer's original bytes, so the file keeps its type. Data files (onnx::load_tensor:
//     run inputs, test data) keep BFLOAT16 as bfloat16 (keep_bfloat16), the type a graph input
//     declared BFLOAT16 takes;
//   DOUBLE, STRING, COMPLEX*, FLOAT8*, (U)INT4 → error naming the tensor and the type.
// Checks, all before allocating: dims ≥ 0, the element count and byte size by checked
// multiplication, exactly one data source (raw_data, the typed field that matches data_type, or
// external data), its length equal to what dims say, `segment` absent, and the tensor's bytes
// within the remaining memory budget. Zero-size dims are fine: an empty tensor.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "refold/tensor.h"

namespace refold::onnx::detail {

// "FLOAT", "INT64", … or "unknown".
std::string data_type_name(int data_type);
// The same in ONNX's type-string spelling: "float", "int64", "float16", … or "unknown".
std::string type_name(int data_type);

struct TensorReadContext {
  std::string what;                 // the tensor in messages: "initializer 'W'"
  std::filesystem::path base_dir;   // external data resolves here; empty: refused
  std::uint64_t* budget = nullptr;  // bytes still allowed; decreased by what is allocated
  bool keep_bfloat16 = false;       // BFLOAT16 → bfloat16 (data files), not widened to float32
};

Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const TensorReadContext& context);

// Little-endian raw_data of `tensor` converted to `data_type` (0: FLOAT for float32, BFLOAT16
// for bfloat16, INT64 for int64). Integer targets reject values out of their range (and
// fractional floats); FLOAT16 rounds to nearest even.
::onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name,
                                    int data_type = 0);

}  // namespace refold::onnx::detail
