// onnx::load: parse, validate (docs/reliability.md A–D), convert, build the modules.
//
// Policies:
//   - an initializer also listed in graph.input (IR 3 style) is a constant, not a runtime input
//     (B9): its value is the default the exporters meant;
//   - unused initializers and dead nodes load (B10); export drops constants no node reads;
//   - Constant nodes stay nodes (their value is a TENSOR attribute), so export writes them as
//     they were;
//   - every unsupported op, and every node with an attribute type refold cannot hold, is listed
//     in one error (A10);
//   - an If whose condition is known at load is replaced by the branch it takes (static_if.h).
#include <algorithm>
#include <set>
#include <vector>

#include "core/check.h"
#include "io/file.h"
#include "onnx/attributes.h"
#include "onnx/proto_io.h"
#include "onnx/source_model.h"
#include "onnx/static_if.h"
#include "onnx/tensor_proto.h"
#include "onnx/type_check.h"
#include "onnx/validate.h"
#include "onnx/value_info.h"
#include "ops/op.h"
#include "refold/onnx/onnx.h"

namespace refold::onnx {
namespace {

using namespace detail;

std::shared_ptr<graph::Graph> build_graph(std::shared_ptr<graph::SourceModel> source,
                                          std::uint64_t budget, const LoadOptions& options) {
  const ::onnx::ModelProto& model = source->model;
  const int opset = validate_header(model);
  inline_static_ifs(
      *source,
      [&](std::shared_ptr<graph::SourceModel> cone) {
        return build_graph(std::move(cone), budget, options);
      },
      options.max_nodes, options.max_folded_bytes);
  const ::onnx::GraphProto& proto = model.graph();
  const GraphPlan plan = validate_graph(proto, options.max_nodes);

  auto g = std::make_shared<graph::Graph>();
  TensorReadContext context{"", source->base_dir, &budget};

  std::set<std::string> initializer_names;
  for (int i = 0; i < proto.initializer_size(); ++i) {
    const auto& t = proto.initializer(i);
    context.what = fmt::format("initializer '{}'", t.name());
    g->set_constant(t.name(), tensor_from_proto(t, context), i);
    initializer_names.insert(t.name());
    if (!options.keep_source_data) {
      // Only what the builders and export still read: the name, dims and data type.
      ::onnx::TensorProto header;
      header.set_name(t.name());
      *header.mutable_dims() = t.dims();
      header.set_data_type(t.data_type());
      source->model.mutable_graph()->mutable_initializer(i)->Swap(&header);
    }
  }
  source->data_released = !options.keep_source_data;
  for (const auto& v : proto.input()) {
    if (initializer_names.count(v.name()) != 0) continue;  // B9: a constant with a default
    g->inputs.push_back(value_info_from_proto(v, fmt::format("graph input '{}'", v.name())));
  }
  for (const auto& v : proto.output()) {
    g->outputs.push_back(value_info_from_proto(v, fmt::format("graph output '{}'", v.name())));
  }
  for (const auto& v : proto.value_info()) {
    // Only tensor types are kept here; export copies the others from the source unchanged.
    if (v.has_type() && !v.type().has_tensor_type()) continue;
    g->value_info.push_back(value_info_from_proto(v, fmt::format("value_info '{}'", v.name())));
  }

  // Visible to the builders (QuantizeLinear reads a zero point initializer's ONNX data type).
  g->source = source;

  // Convert every node, collecting what cannot run before building anything.
  std::vector<graph::Node> nodes;
  std::vector<std::string> unsupported;
  for (std::size_t index : plan.order) {
    const auto& n = proto.node(static_cast<int>(index));
    const std::string& name = plan.node_names[index];
    graph::Node node;
    node.name = name;
    node.op_type = n.op_type();
    node.domain = n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    node.source = static_cast<int>(index);
    context.what = describe_node(name, n);
    std::vector<std::string> reasons;
    node.attributes = attributes_from_proto(n, context, reasons);
    if (auto reason = ops::unsupported_reason(node, opset))
      reasons.insert(reasons.begin(), *reason);
    if (!reasons.empty()) {
      unsupported.push_back(fmt::format("{}: {}", context.what, fmt::join(reasons, ", ")));
    }
    nodes.push_back(std::move(node));
  }
  if (!unsupported.empty()) {
    fail("{} unsupported op{}: {}", unsupported.size(), unsupported.size() == 1 ? "" : "s",
         fmt::join(unsupported, "; "));
  }

  for (graph::Node& node : nodes) {
    const auto& n = proto.node(node.source);
    try {
      node.module = ops::build_module({node, *g, opset});
    } catch (const Error& e) {
      throw Error(fmt::format("{}: {}", describe_node(node.name, n), e.what()));
    }
    REFOLD_CHECK(node.module != nullptr, "{}: no module was built", describe_node(node.name, n));
    g->add_node(std::move(node));
  }
  // Last, so that what refold cannot run (above) is said first.
  source->value_types = check_types(proto, opset, plan);
  g->verify();
  return g;
}

// A source model named `name`, its external data read from `base_dir`, and `parse` filling its
// ModelProto and returning the bytes that parse held in memory (the parsed model's, and the
// caller's copy of the bytes where it keeps one), which count against the budget.
template <typename Parse>
std::shared_ptr<graph::Graph> load_parsed(const std::string& name,
                                          const std::filesystem::path& base_dir,
                                          const LoadOptions& options, const Parse& parse) {
  try {
    auto source = std::make_shared<graph::SourceModel>();
    source->file = name;
    if (!base_dir.empty()) {
      std::error_code ec;
      source->base_dir = std::filesystem::canonical(base_dir, ec);
      REFOLD_CHECK(!ec, "cannot resolve the model folder '{}': {}", base_dir.string(),
                   ec.message());
    }
    const std::uint64_t used = parse(source->model);
    return build_graph(std::move(source), options.max_memory - used, options);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", name, e.what()));
  }
}

}  // namespace

std::shared_ptr<graph::Graph> load(const std::filesystem::path& file, const LoadOptions& options) {
  std::filesystem::path dir = file.parent_path();
  if (dir.empty()) dir = ".";
  // Messages about the file itself already read "model '<file>': …".
  io::InputFile input(file, "model");
  check_file_size(input, options.max_memory);
  // Streamed from the file: only the parsed model holds its bytes.
  return load_parsed(file.string(), dir, options, [&](::onnx::ModelProto& model) {
    parse_model_file(input, model);
    return input.size();
  });
}

std::shared_ptr<graph::Graph> load_from_memory(std::span<const std::byte> bytes,
                                               const std::string& name,
                                               const std::filesystem::path& base_dir,
                                               const LoadOptions& options) {
  return load_parsed(name, base_dir, options, [&](::onnx::ModelProto& model) {
    REFOLD_CHECK(bytes.size() <= options.max_memory,
                 "model is {} bytes, over the memory budget of {} bytes", bytes.size(),
                 options.max_memory);
    parse_model(bytes, model);
    // The parsed model holds the caller's bytes again; both count against the budget.
    const std::uint64_t used = 2 * static_cast<std::uint64_t>(bytes.size());
    REFOLD_CHECK(used <= options.max_memory,
                 "model is {} bytes; parsed it needs {} bytes, over the memory budget of {} bytes",
                 bytes.size(), used, options.max_memory);
    return used;
  });
}

}  // namespace refold::onnx
