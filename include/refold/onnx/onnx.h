// refold::onnx — read an ONNX model into a graph::Graph, write one back.
//
//   auto g = refold::onnx::load("model.onnx");
//   refold::passes::optimize(*g);
//   refold::onnx::save(*g, "model.fast.onnx");
//
// load() validates everything itself (docs/reliability.md sections A–D, F): it never runs onnx's
// checker or shape inference, refuses files over the memory budget before parsing, resolves
// external data only inside the model's folder, and lists every unsupported op at once:
//   model.onnx: 2 unsupported ops: node 'fc' (com.microsoft.FusedGemm), node 'n3' (Einsum)
// Every error names the file and the node (name, op type) or tensor and the offending value.
//
// save() keeps what docs/reliability.md lists under "nothing lost": header, interface, untouched
// nodes and initializers byte-identical and in order; it writes a temporary file and renames it,
// so the output is whole or absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "refold/graph/graph.h"
#include "refold/tensor.h"

namespace refold::onnx {

struct LoadOptions {
  // Upper bound on the bytes the model may make us allocate (file, tensors, folded constants).
  std::uint64_t max_memory = std::uint64_t{8} << 30;
  // Constant folding at import (the conditions of If nodes, onnx/static_if.h): results larger
  // than this stay unfolded.
  std::uint64_t max_folded_bytes = std::uint64_t{64} << 20;
  // Upper bound on the number of nodes (docs/reliability.md A11).
  std::size_t max_nodes = 1'000'000;
  // Keep the parsed file's copy of every initializer, so that saving writes untouched ones byte
  // for byte. false: drop each one's data as soon as its tensor is made, for a model that only
  // runs (refold::Session): the weights are then in memory once, during loading too, and saving
  // still writes every constant, from its tensor in the file's data type.
  bool keep_source_data = true;
};

std::shared_ptr<graph::Graph> load(const std::filesystem::path& file,
                                   const LoadOptions& options = {});
// A model held in memory (docs/reliability.md D10): `name` stands for the file in messages;
// external data resolves against `base_dir` with the same checks, and is refused when `base_dir`
// is empty.
std::shared_ptr<graph::Graph> load_from_memory(std::span<const std::byte> bytes,
                                               const std::string& name,
                                               const std::filesystem::path& base_dir = {},
                                               const LoadOptions& options = {});
void save(const graph::Graph& graph, const std::filesystem::path& file);
// The bytes save() would write, every tensor embedded (no external-data reference).
std::string save_to_bytes(const graph::Graph& graph);

// One TensorProto (.pb), as the ONNX test folders store inputs and outputs. Element types as
// for initializers (integers and bool → int64, FLOAT16 → float32) except BFLOAT16, which stays
// bfloat16.
Tensor load_tensor(const std::filesystem::path& file);
// The same, for a file that feeds (or is compared with) a graph value declared with ONNX element
// type `declared_elem_type` (0: unknown). ONNX's own test data, written with numpy (which has no
// bfloat16), stores a BFLOAT16 value as UINT16 bit patterns: declared BFLOAT16 (16), such a file
// reads as bfloat16.
Tensor load_tensor(const std::filesystem::path& file, int declared_elem_type);
void save_tensor(const Tensor& tensor, const std::string& name, const std::filesystem::path& file);

}  // namespace refold::onnx
