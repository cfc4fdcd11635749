// What is known statically about a value of a graph, for the passes that may rewrite a node
// only when its output keeps its input's shape or dtype (simplify) or needs a 4-d input
// (reparameterize): followed through declarations (graph inputs, value_info), constants, a
// Conv's constant weight, and the ops that keep their input's shape or dtype.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "refold/dtype.h"
#include "refold/graph/graph.h"

namespace refold::passes::detail {

// A shape as far as it is known: the rank, and each dim or −1 when it is not.
using KnownShape = std::vector<std::int64_t>;

// The declared type of a graph input or an intermediate value (value_info), or null.
const graph::ValueInfo* declared_value(const graph::Graph& graph, const std::string& value);

// `value`'s shape or dtype when known (`depth`: how far producers have been followed).
std::optional<KnownShape> known_shape(const graph::Graph& graph, const std::string& value,
                                      int depth = 0);
std::optional<DType> known_dtype(const graph::Graph& graph, const std::string& value,
                                 int depth = 0);

// Runs `node` as Graph::run does (graph.h, "How a node runs") on the values `value_of` gives
// for its inputs ("" reads as an undefined Tensor).
std::vector<Tensor> run_node(const graph::Node& node,
                             const std::function<Tensor(const std::string&)>& value_of);

// The static shapes of a graph's values (every dim known), where the graph's inputs declare
// theirs: what Graph::run would find, found by running each producer with stand-ins — zeros
// of the known shape and dtype — for its non-constant inputs. That is sound because an op's
// output shape follows from its inputs' shapes, its attributes and the values of its
// non-floating inputs (ops::ShapeRule::Standard); so a stand-in replaces only a floating-point
// input, and never one whose values set the shape (ShapeRule::ReadsFloatValues: Range's
// inputs; ShapeRule::LaterInputsSetShape: Resize's scales, but not its data). A producer that
// throws on stand-ins leaves its outputs unknown.
// Each value is found once and remembered: the graph may change between queries as long as
// every value keeps its shape (constant folding and the fusions do). Stand-ins cost one run of
// the producers a query reaches, with zeros.
class StaticShapes {
 public:
  // `strict`: a producer that throws on its stand-ins throws out of the query (its error named
  // by the node), instead of leaving its outputs unknown — check_static_graph's use.
  // `inputs`: shapes for graph inputs that replace the declared ones (symbolic dims set).
  explicit StaticShapes(const graph::Graph& graph, bool strict = false,
                        std::map<std::string, Shape> inputs = {})
      : graph_(graph), strict_(strict), inputs_(std::move(inputs)) {}
  std::optional<Shape> shape(const std::string& value);
  std::optional<DType> dtype(const std::string& value);
  // Whether `node`'s outputs follow from its inputs' shapes alone (ShapeRule::InputShapesOnly)
  // and those are static: then run_stand_ins(node) gives its true outputs.
  bool values_from_shapes(const graph::Node& node);
  // `node` run with stand-ins for its non-constant inputs, or nullopt (unknown input shapes,
  // a non-floating or shape-setting non-constant input, a throw).
  std::optional<std::vector<Tensor>> run_stand_ins(const graph::Node& node);

 private:
  struct Known {
    Shape shape;
    DType dtype = DType::Float32;
  };
  // Known, unknown (nullopt), or not yet asked (absent from memo_).
  const std::optional<Known>& find(const std::string& value);
  // The value when it needs no producer run (constant, graph input), else nullopt and `pending`.
  std::optional<std::optional<Known>> direct(const std::string& value) const;

  const graph::Graph& graph_;
  bool strict_ = false;
  std::map<std::string, Shape> inputs_;
  std::map<std::string, std::optional<Known>> memo_;
};

// The rank of `value` when known: declared, a constant, kept from a producer (known_shape), or
// static (`shapes`).
std::optional<std::int64_t> known_rank(const graph::Graph& graph, StaticShapes& shapes,
                                       const std::string& value);

// What the graph's declarations promise: every node runs on stand-ins of its inputs' shapes
// (StaticShapes, strict) without an error, and each graph output and declared intermediate
// value (value_info) gets the static dims it is declared with (element types are checked at
// load, src/onnx/type_check.h). Throws refold::Error naming the node or value and both values
// ("value 'r' is declared [1, 3, 9, 9], but node 'Relu_0' (Relu) computes [1, 3, 8, 8]").
// Values whose shapes depend on data (a non-constant integer input, Range's limits) are not
// checked.
// The graph inputs' shapes are `given` or else declared. Where dims stay symbolic, the check
// runs twice, with each symbol set to two different sizes (a symbol that is some input's first
// dim, the batch, to 1 and 2; others to 64 and 96), and refuses only an error that both runs
// give word for word: one that does not depend on the symbols' sizes (a Conv over 3 channels
// whose weight expects 4), never one that another size might avoid (a Reshape to [-1, 100]).
void check_static_graph(const graph::Graph& graph, const std::map<std::string, Shape>& given = {});

}  // namespace refold::passes::detail
