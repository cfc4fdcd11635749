// linear-merging and conv-input-folding: layers with constant weights absorb what is linear
// around their input — the affine map before matrix products (linear-merging) and convs
// (conv-input-folding, which runs after reparameterize: that pass merges DBB's BN-and-pad
// branches whole, exactly, where folding their parts first would leave float residue in the
// padding it checks), and a second product of the same input added to a product.
//
// Patterns and rewrites (the last node's output name survives):
//   x → A → Gemm/MatMul(W_i, b_i) or Conv(W_i, b_i) → y_i        x → same layer(W_i', b_i') → y_i
//       (every reader of A)
//   x → Gemm/MatMul(W1, b1) ─┐
//   x → Gemm/MatMul(W2, b2) ─┴→ Add (or Sub) → y              x → Gemm/MatMul(W1 ± W2, b1 ± b2) → y
// where A is y = a·v + t per input feature — the product's last input axis, a conv's channels
// (axis 1): a BatchNormalization along that axis, a Mul/Div by a constant, an Add/Sub of one, a
// Neg (detail::axis_affine). A classifier head written as BatchNorm1d → Linear, plus a
// distillation head of the same input averaged in (RepViT, LeViT, EfficientFormer: (head(x) +
// dist(x)) / 2) becomes one Gemm: this pass folds each BN and sums the two, and bn-folding,
// after it, folds the division. A pre-norm BatchNorm before 1×1 convs (NextViT, MaxViT,
// InceptionNeXt, Visformer, MobileNetV4's attention q, k and v) disappears into them.
//
// Why exact: a product is linear in its input and in its weight, so
//   (a·x + t)·W + b = x·(diag(a)·W) + (t·W + b)        (reparam::fold_affine_before_linear)
//   x·W1 + b1 + x·W2 + b2 = x·(W1 + W2) + (b1 + b2)     (reparam::sum_linear)
// and a conv likewise per input channel (reparam::fold_affine_before_conv) where every tap reads
// the input: a tap in the zero padding reads 0, not t, so a padded conv takes A only when t = 0.
// A Gemm's α and β go into W and b.
//
// Preconditions (docs/reliability.md F18–F23): weights and biases are constants (a Gemm's C one
// value per feature), a product's weight is a 2-d float32 matrix, a Gemm has transA = 0, a conv
// is a plain one (detail::conv_problem) with no padding or A without shift; an affine node's
// every reader is such a layer reading it as its input once, and it is not a graph output; the
// two summed products read the same value and each is read by the sum alone. A MatMul product
// that gains a bias gets an Add of it after it. Otherwise the nodes stay as they are.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "passes/branch_nodes.h"
#include "passes/known_values.h"
#include "passes/node_module.h"
#include "passes/passes.h"
#include "refold/error.h"
#include "refold/nn/conv.h"
#include "refold/reparam/kernel_algebra.h"
#include "refold/reparam/module_kernels.h"

namespace refold::passes {
namespace {

using detail::describe;
using detail::is_op;
using reparam::LinearKernel;

// A Gemm or MatMul with a constant weight read as one linear map of its first input.
struct Product {
  std::size_t index = 0;
  LinearKernel kernel;  // α·B (or W) and β·C; the features along kernel.feature_axis
  bool gemm = false;
};

std::optional<Product> read_product(const graph::Graph& g, std::size_t index) {
  const graph::Node& n = g.nodes()[index];
  const bool gemm = is_op(n, "Gemm");
  if ((!gemm && !is_op(n, "MatMul")) || !n.parts.empty() || n.inputs.size() < 2 ||
      n.outputs.size() != 1 || detail::constant_value(g, n.inputs[0]))
    return std::nullopt;
  if (gemm && n.attributes.get_int("transA", 0) != 0) return std::nullopt;
  const auto weight = detail::constant_value(g, n.inputs[1]);
  if (!weight || weight->dim() != 2 || weight->dtype() != DType::Float32) return std::nullopt;
  const bool trans_b = gemm && n.attributes.get_int("transB", 0) == 1;
  Product p{index, {*weight, {}, trans_b ? 0 : 1}, gemm};
  const std::int64_t features = weight->size(p.kernel.feature_axis);
  const float alpha = gemm ? n.attributes.get_float("alpha", 1.0f) : 1.0f;
  if (alpha != 1.0f) p.kernel = reparam::fold_affine_into_linear(p.kernel, {{alpha}, {0.0}});
  if (gemm && n.inputs.size() > 2 && !n.inputs[2].empty()) {
    const auto c = detail::constant_value(g, n.inputs[2]);
    const auto values = c ? detail::axis_values(*c, 1, 2) : std::nullopt;
    if (!values) return std::nullopt;
    const double beta = n.attributes.get_float("beta", 1.0f);
    std::vector<float> bias(static_cast<std::size_t>(features));
    std::vector<float> old =
        p.kernel.bias.defined() ? p.kernel.bias.to_vector() : std::vector<float>(bias.size(), 0.0f);
    for (std::size_t i = 0; i < bias.size(); ++i)
      bias[i] = static_cast<float>(old[i] + beta * (*values)[values->size() == 1 ? 0 : i]);
    p.kernel.bias = from_values(bias, {features});
  }
  return p;
}

// The kernel with its weight transposed: the same map, features on the other axis.
LinearKernel transposed(const LinearKernel& k) {
  return {k.weight.permute({1, 0}).contiguous(), k.bias, 1 - k.feature_axis};
}

bool has_nonzero(const Tensor& t) {
  if (!t.defined()) return false;
  const std::vector<float> v = t.to_vector();
  return std::any_of(v.begin(), v.end(), [](float e) { return e != 0.0f; });
}

// The nodes computing `kernel` over `x` into `output`, shaped like `like` (a Gemm keeps its
// transB; a MatMul whose kernel has a nonzero bias is followed by an Add of it).
std::vector<graph::Node> product_nodes(graph::Graph& g, const graph::Node& like,
                                       const std::string& x, const LinearKernel& kernel,
                                       const std::string& output, const std::string& origin) {
  const bool gemm = is_op(like, "Gemm");
  const std::string base = g.unique_name(like.name + "_merged");
  graph::Node product;
  product.name = like.name;
  product.op_type = like.op_type;
  product.origin = origin;
  std::vector<graph::Node> out;
  if (gemm) {
    product.attributes.set("transB", std::int64_t{kernel.feature_axis == 0 ? 1 : 0});
    product.inputs = detail::add_parameter_constants(
        g, x, base, kernel.weight, has_nonzero(kernel.bias) ? kernel.bias : Tensor());
    product.outputs = {output};
    out.push_back(with_module(g, std::move(product)));
    return out;
  }
  const LinearKernel k = kernel.feature_axis == 1 ? kernel : transposed(kernel);
  product.inputs = detail::add_parameter_constants(g, x, base, k.weight, Tensor());
  if (!has_nonzero(k.bias)) {
    product.outputs = {output};
    out.push_back(with_module(g, std::move(product)));
    return out;
  }
  product.outputs = {g.unique_name(output + "_unbiased")};
  graph::Node add;
  add.name = g.unique_name(like.name + "_bias");
  add.op_type = "Add";
  const std::string constant = g.unique_name(base + ".bias");
  g.set_constant(constant, k.bias);
  add.inputs = {product.outputs[0], constant};
  add.outputs = {output};
  add.origin = origin;
  out.push_back(with_module(g, std::move(product)));
  out.push_back(with_module(g, std::move(add)));
  return out;
}

// A rewrite: the nodes to insert in order at the first erased node's place.
struct Merge {
  std::vector<graph::Node> nodes;
  std::vector<std::size_t> erase;
  std::string note;
};

// The layers an affine node folds into: Gemm/MatMul products (linear-merging) or convs
// (conv-input-folding, after reparameterize has merged the branches it sees whole).
enum class Readers { Products, Convs };

class Merger {
 public:
  Merger(graph::Graph& graph, Readers readers) : g_(graph), shapes_(graph), readers_(readers) {}

  // Node `a` as an affine map of the input features of every layer reading it: the last axis
  // of a product's input, the channels (axis 1) of a conv's.
  std::optional<Merge> affine_before(std::size_t a) {
    const graph::Node& an = g_.nodes()[a];
    if (an.outputs.size() != 1 || g_.is_graph_output(an.outputs[0]) || an.inputs.empty())
      return std::nullopt;
    if (!is_op(an, "BatchNormalization") && !is_op(an, "Neg") && !is_op(an, "Add") &&
        !is_op(an, "Sub") && !is_op(an, "Mul") && !is_op(an, "Div"))
      return std::nullopt;
    const std::vector<std::size_t> readers = g_.consumers(an.outputs[0]);
    if (readers.empty()) return std::nullopt;
    // The rank of the value the affine maps (not of its constant, which may come first).
    const bool constant_first =
        an.inputs.size() == 2 && detail::constant_value(g_, an.inputs[0]).has_value();
    const auto rank = detail::known_rank(g_, shapes_, an.inputs[constant_first ? 1 : 0]);
    if (!rank) return std::nullopt;
    // Every fold first: a declined one leaves the graph without a constant made for the others.
    std::vector<Folded> folds;
    for (std::size_t r : readers) {
      const graph::Node& n = g_.nodes()[r];
      if (n.inputs.empty() || n.inputs[0] != an.outputs[0] ||
          std::count(n.inputs.begin(), n.inputs.end(), an.outputs[0]) != 1)
        return std::nullopt;
      const bool conv = readers_ == Readers::Convs;
      if (conv != is_op(n, "Conv")) return std::nullopt;
      auto read = detail::axis_affine(g_, an, conv ? 3 : 1, *rank);
      if (std::holds_alternative<std::string>(read)) return std::nullopt;
      auto fold = conv ? conv_after(r, std::get<detail::AxisAffine>(read))
                       : product_after(r, std::get<detail::AxisAffine>(read));
      if (!fold) return std::nullopt;
      folds.push_back(std::move(*fold));
    }
    Merge m;
    m.erase = {a};
    for (const Folded& f : folds) {
      const graph::Node& n = g_.nodes()[f.reader];
      const std::string origin = fmt::format("{} + {}", an.name, n.name);
      if (f.conv) {
        graph::Node conv;
        conv.name = n.name;
        conv.outputs = n.outputs;
        conv.origin = origin;
        detail::set_conv(g_, conv, f.operand, g_.unique_name(n.name + "_prefold"), *f.conv,
                         f.geometry, f.format);
        m.nodes.push_back(std::move(conv));
      } else {
        for (graph::Node& node : product_nodes(g_, n, f.operand, f.product, n.outputs[0], origin))
          m.nodes.push_back(std::move(node));
      }
      m.erase.push_back(f.reader);
    }
    m.note = fmt::format("folded {} into the {} layer{} reading it", describe(an), readers.size(),
                         readers.size() == 1 ? "" : "s");
    return m;
  }

  // Node `s`, an Add or Sub of two products of one value.
  std::optional<Merge> sum_of_products(std::size_t s) {
    const graph::Node& sn = g_.nodes()[s];
    const bool sub = is_op(sn, "Sub");
    if ((!is_op(sn, "Add") && !sub) || !sn.parts.empty() || sn.inputs.size() != 2 ||
        sn.outputs.size() != 1 || sn.inputs[0] == sn.inputs[1])
      return std::nullopt;
    std::vector<Product> terms;
    for (const std::string& v : sn.inputs) {
      const auto q = g_.producer(v);
      if (!q || !detail::single_use_problem(g_, v, s).empty()) return std::nullopt;
      auto p = read_product(g_, *q);
      if (!p) return std::nullopt;
      terms.push_back(std::move(*p));
    }
    const graph::Node& first = g_.nodes()[terms[0].index];
    const graph::Node& second = g_.nodes()[terms[1].index];
    if (first.inputs[0] != second.inputs[0]) return std::nullopt;
    LinearKernel a = terms[0].kernel, b = terms[1].kernel;
    if (b.feature_axis != a.feature_axis) b = transposed(b);
    if (a.weight.sizes() != b.weight.sizes()) return std::nullopt;
    if (sub) b = reparam::fold_affine_into_linear(b, {{-1.0}, {0.0}});
    // A Gemm's input is 2-d, so the sum may be a Gemm wherever one term is.
    const graph::Node& like = terms[1].gemm && !terms[0].gemm ? second : first;
    Merge m;
    m.nodes = product_nodes(g_, like, first.inputs[0], reparam::sum_linear({a, b}), sn.outputs[0],
                            fmt::format("{} {} {}", first.name, sub ? "-" : "+", second.name));
    m.erase = {terms[0].index, terms[1].index, s};
    m.note = fmt::format("merged {} and {} summed by {} into one {}", describe(first),
                         describe(second), describe(sn), like.op_type);
    return m;
  }

 private:
  // A layer reading the affine's output, with the affine folded into it.
  struct Folded {
    std::size_t reader = 0;
    std::string operand;                      // the affine's input, which the layer reads now
    LinearKernel product;                     // a product's kernel, or
    std::optional<reparam::ConvKernel> conv;  // a conv's, with its geometry and weight format
    nn::Conv2dOptions geometry{1, 1, 1};
    MemoryFormat format = MemoryFormat::Contiguous;
  };

  // Product `r` (a Gemm or MatMul with a constant weight): reparam::fold_affine_before_linear.
  std::optional<Folded> product_after(std::size_t r, const detail::AxisAffine& affine) {
    auto p = read_product(g_, r);
    if (!p) return std::nullopt;
    Folded f;
    f.reader = r;
    f.operand = affine.operand;
    try {
      f.product = reparam::fold_affine_before_linear(p->kernel, affine.affine);
    } catch (const Error&) {
      return std::nullopt;  // 1 or K values do not match the weight: not this axis
    }
    return f;
  }

  // Conv `r`, the affine per input channel: reparam::fold_affine_before_conv, only where that is
  // exact — the conv reads no padding, or the affine shifts nothing (a tap in the padding reads
  // 0, not the shift).
  std::optional<Folded> conv_after(std::size_t r, const detail::AxisAffine& affine) {
    const graph::Node& n = g_.nodes()[r];
    if (!detail::conv_problem(g_, n).empty()) return std::nullopt;
    const auto module = detail::conv_module(n);
    const nn::Conv2dOptions& geometry = module->options();
    const Pads2d pads = geometry.padding().resolve(geometry.kernel_size(), geometry.dilation());
    const auto& shift = affine.affine.shift;
    if (pads != Pads2d{} &&
        std::any_of(shift.begin(), shift.end(), [](double t) { return t != 0.0; }))
      return std::nullopt;
    Folded f;
    f.reader = r;
    f.operand = affine.operand;
    try {
      f.conv = reparam::fold_affine_before_conv(reparam::kernel_of(*module), affine.affine);
    } catch (const Error&) {
      return std::nullopt;  // 1 or C values do not match the conv's input channels
    }
    f.geometry = geometry;
    f.format = module->weight().suggest_memory_format();
    return f;
  }

  graph::Graph& g_;
  detail::StaticShapes shapes_;
  Readers readers_;  // merging keeps every value's shape
};

}  // namespace

namespace {

// Sweeps until nothing merges: a fold can hand a layer a new affine node before it (a
// LayerNorm's β, then its γ).
PassReport merge(graph::Graph& graph, const char* pass, Readers readers) {
  PassReport report{pass, false, {}};
  Merger merger(graph, readers);
  for (bool merged = true; merged;) {
    merged = false;
    for (std::size_t i = 0; i < graph.nodes().size(); ++i) {
      std::optional<Merge> m = merger.affine_before(i);
      if (!m && readers == Readers::Products) m = merger.sum_of_products(i);
      if (!m) continue;
      report.notes.push_back(m->note);
      // The new nodes read only what the first erased node read (or each other), so they go where
      // it was: every reader of what they write came after it.
      i = detail::replace_nodes_at_first(graph, m->erase, std::move(m->nodes));
      // (the merged node may be summed again further on)
      report.changed = merged = true;
    }
  }
  graph.verify();
  return report;
}

}  // namespace

PassReport merge_linear_layers(graph::Graph& graph) {
  return merge(graph, "linear-merging", Readers::Products);
}

PassReport fold_conv_inputs(graph::Graph& graph) {
  return merge(graph, "conv-input-folding", Readers::Convs);
}

}  // namespace refold::passes
