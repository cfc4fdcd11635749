// Gemm (nn::Linear when it is one), MatMul and Einsum.
#include "ops/gemm.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <optional>

#include "core/check.h"
#include "core/element_access.h"
#include "core/stand_in.h"
#include "kernels/native/few_rows_matmul.h"
#include "kernels/native/small_matmul.h"
#include "kernels/onednn/matmul.h"
#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/tensor_ops.h"
#include "kernels/reference/typed_elements.h"
#include "kernels/verbose.h"
#include "ops/op.h"
#include "ops/pad.h"
#include "ops/window.h"
#include "refold/functional.h"
#include "refold/nn/linear.h"

namespace refold::ops {

std::vector<Tensor> Gemm::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK((in.size() == 2 || in.size() == 3) && in[0].defined() && in[1].defined(),
               "Gemm: expects A, B and optional C; got {} inputs", in.size());
  const Tensor c = in.size() > 2 ? in[2] : Tensor();
  const auto& a = attributes_;
  return {reference::gemm(in[0], in[1], c, a.alpha, a.beta, a.trans_a, a.trans_b)};
}

namespace {

// y · alpha (one more pass, where the product could not apply alpha itself).
Tensor scaled(const Tensor& y, float alpha) {
  if (alpha == 1.0f) return y;
  return functional::mul(y, full({1}, alpha, y.dtype()));
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in, float alpha) {
  const bool floating = a_in.dtype() == b_in.dtype() && is_floating(a_in.dtype());
  // oneDNN reads row- or column-major matrices through their strides (onednn::matmul_reads: a
  // view the executor hands MatMul, graph::Op::reads_views). An operand laid out otherwise (a
  // channels_last activation; EfficientFormerV2's attention after its talking-head convs) is
  // copied once here, rather than every matrix of it declined to the reference.
  const auto readable = [&](const Tensor& t) {
    return !floating || t.numel() == 0 || onednn::matmul_reads(t) ? t : t.contiguous();
  };
  // [..., K] · [K, N] is linear(a, bᵀ) (the weight read through a transposed view, any strides),
  // but for an a of a few rows: a stream over b (native/few_rows_matmul.h).
  if (a_in.dim() >= 2 && b_in.dim() == 2 && floating && a_in.size(-1) == b_in.size(0)) {
    std::string declined;
    if (!StandInRun::active())
      if (Tensor y = native::few_rows_matmul(a_in, b_in, &declined); y.defined()) {
        log_dispatch("matmul", "native few rows");
        return scaled(y, alpha);
      }
    return scaled(functional::linear(readable(a_in), b_in.permute({1, 0})), alpha);
  }
  // Two activations, a small product (attention's per-head matrices): refold's own kernel,
  // which reads any strides (no copy first) and costs no primitive per call
  // (native/small_matmul.h).
  if (floating && !StandInRun::active()) {
    std::string declined;
    if (Tensor y = native::small_matmul(a_in, b_in, alpha, &declined); y.defined()) {
      log_dispatch("matmul", "native small");
      return y;
    }
  }
  const Tensor a = readable(a_in);
  const Tensor b = readable(b_in);
  if (a.dim() < 2 || b.dim() < 2 || !floating || a.size(-1) != b.size(-2) || a.numel() == 0 ||
      b.numel() == 0)
    return scaled(reference::matmul(a, b), alpha);
  const std::int64_t m = a.size(-2), n = b.size(-1);
  const Shape a_batch(a.sizes().begin(), a.sizes().end() - 2);
  const Shape b_batch(b.sizes().begin(), b.sizes().end() - 2);
  const Shape batch = reference::detail::broadcast_shapes({a_batch, b_batch}, "MatMul");
  Shape out_sizes = batch;
  out_sizes.insert(out_sizes.end(), {m, n});
  // A stand-in run asks only for the shape (core/stand_in.h): no oneDNN primitive, no product.
  if (StandInRun::active()) return zeros(out_sizes, a.dtype());
  // Batched: oneDNN's matmul in one call, else out[i..] = a[i..] · b[i..] over the broadcast
  // batch index, one linear each.
  std::string declined;
  if (Tensor y = onednn::matmul(a, b, alpha, &declined); y.defined()) {
    log_dispatch("matmul", "onednn");
    return y;
  }
  log_verbose(fmt::format("matmul: one linear per matrix (onednn declined: {})", declined));
  Tensor output = empty(out_sizes, a.dtype());
  if (output.numel() == 0) return output;
  const Shape as = reference::detail::broadcast_strides(a, out_sizes);
  const Shape bs = reference::detail::broadcast_strides(b, out_sizes);
  const Shape& os = output.strides();
  const std::size_t r = batch.size();
  for_each_index(batch, [&](const Shape& idx) {
    std::int64_t ao = a.storage_offset(), bo = b.storage_offset(), oo = output.storage_offset();
    for (std::size_t d = 0; d < r; ++d) {
      ao += idx[d] * as[d];
      bo += idx[d] * bs[d];
      oo += idx[d] * os[d];
    }
    const Tensor ai = a.as_strided({m, a.size(-1)}, {a.stride(-2), a.stride(-1)}, ao);
    const Tensor bt = b.as_strided({n, b.size(-2)}, {b.stride(-1), b.stride(-2)}, bo);
    output.as_strided({m, n}, {os[r], os[r + 1]}, oo).copy_(functional::linear(ai, bt));
  });
  return scaled(output, alpha);
}

namespace {

// t with its last two dims swapped (a view).
Tensor transposed(const Tensor& t) {
  Shape order;
  for (std::int64_t d = 0; d < t.dim(); ++d) order.push_back(d);
  std::swap(order[order.size() - 1], order[order.size() - 2]);
  return t.permute(order);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, float alpha, const Shape& perm) {
  if (perm.empty()) return matmul(a, b, alpha);
  const auto rank = static_cast<std::int64_t>(perm.size());
  const bool floating = a.dtype() == b.dtype() && is_floating(a.dtype());
  const bool n_inner = perm.back() == rank - 1, m_inner = perm.back() == rank - 2;
  if (floating && (n_inner || m_inner) && !StandInRun::active() && a.dim() >= 2 && b.dim() >= 2 &&
      std::max(a.dim(), b.dim()) == rank && a.size(-1) == b.size(-2)) {
    Shape y_sizes(static_cast<std::size_t>(rank), 1);  // the product's [batch..., M, N]
    for (const Tensor* t : {&a, &b})
      for (std::int64_t d = 0; d < t->dim() - 2; ++d) {
        std::int64_t& size = y_sizes[static_cast<std::size_t>(rank - t->dim() + d)];
        size = size == 1 ? t->size(d) : size;
      }
    y_sizes[static_cast<std::size_t>(rank - 2)] = a.size(-2);
    y_sizes[static_cast<std::size_t>(rank - 1)] = b.size(-1);
    Shape z_sizes, inverse(perm.size());
    for (std::int64_t d = 0; d < rank; ++d) {
      z_sizes.push_back(y_sizes[static_cast<std::size_t>(perm[d])]);
      inverse[static_cast<std::size_t>(perm[d])] = d;
    }
    Tensor z = empty(z_sizes, a.dtype());
    Tensor y = z.permute(inverse);  // the product's sizes, laid out as z
    std::string declined;
    // y = a · b, or (M innermost) yᵀ = bᵀ · aᵀ, whose rows are y's columns.
    Tensor dst = m_inner ? transposed(y) : y;
    const Tensor lhs = m_inner ? transposed(b) : a, rhs = m_inner ? transposed(a) : b;
    if (onednn::matmul_reads(lhs) && onednn::matmul_reads(rhs) && z.numel() > 0 &&
        onednn::matmul_into(lhs, rhs, alpha, dst, &declined)) {
      log_dispatch("matmul", "onednn, written permuted");
      return z;
    }
  }
  return matmul(a, b, alpha).permute(perm).contiguous();
}

std::vector<Tensor> MatMul::run(const std::vector<Tensor>& in) {
  REFOLD_CHECK(in.size() == 2 && in[0].defined() && in[1].defined(),
               "MatMul: expects 2 inputs, got {}", in.size());
  return {matmul(in[0], in[1], alpha_, perm_)};
}

namespace {

bool distinct(std::vector<int> labels) {
  std::sort(labels.begin(), labels.end());
  return std::adjacent_find(labels.begin(), labels.end()) == labels.end();
}

std::int64_t position(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) - labels.begin();
}

bool has(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// A two-input contraction as a batched matrix product: the labels split into batch (both
// inputs and the output), M (A and the output), N (B and the output) and K (both inputs, summed);
// A is permuted to [batch, M, K] and B to [batch, K, N], each group flattened, and the product
// [batch, M, N] unflattened and permuted to the output's order. nullopt when the equation is
// not of that form.
std::optional<Tensor> einsum_as_matmul(const reference::EinsumEquation& equation, const Tensor& a,
                                       const Tensor& b) {
  const reference::EinsumLabels labels = reference::einsum_labels(equation, {a.sizes(), b.sizes()});
  const std::vector<int>& la = labels.inputs[0];
  const std::vector<int>& lb = labels.inputs[1];
  const std::vector<int>& lo = labels.output;
  if (!distinct(la) || !distinct(lb)) return std::nullopt;
  std::vector<int> batch, rows, cols, sums;
  for (int l : lo) (has(la, l) && has(lb, l) ? batch : has(la, l) ? rows : cols).push_back(l);
  for (int l : la)
    if (!has(lo, l)) {
      if (!has(lb, l)) return std::nullopt;  // summed over A alone
      sums.push_back(l);
    }
  for (int l : lb)
    if (!has(lo, l) && !has(la, l)) return std::nullopt;
  auto size_in = [](const Tensor& t, const std::vector<int>& in, int l) {
    return t.size(position(in, l));
  };
  for (int l : batch)
    if (size_in(a, la, l) != size_in(b, lb, l)) return std::nullopt;  // broadcast "..."
  Shape a_perm, b_perm, out_sizes;
  std::int64_t nb = 1, nm = 1, nn = 1, nk = 1;
  for (int l : batch) {
    a_perm.push_back(position(la, l));
    b_perm.push_back(position(lb, l));
    nb *= size_in(a, la, l);
    out_sizes.push_back(size_in(a, la, l));
  }
  for (int l : rows) {
    a_perm.push_back(position(la, l));
    nm *= size_in(a, la, l);
    out_sizes.push_back(size_in(a, la, l));
  }
  for (int l : sums) {
    a_perm.push_back(position(la, l));
    b_perm.push_back(position(lb, l));
    nk *= size_in(a, la, l);
  }
  for (int l : cols) {
    b_perm.push_back(position(lb, l));
    nn *= size_in(b, lb, l);
    out_sizes.push_back(size_in(b, lb, l));
  }
  const Tensor y =
      matmul(a.permute(a_perm).reshape({nb, nm, nk}), b.permute(b_perm).reshape({nb, nk, nn}))
          .reshape(out_sizes);
  // y's dims are batch, rows, cols; output dim k is the one holding label lo[k].
  std::vector<int> order = batch;
  order.insert(order.end(), rows.begin(), rows.end());
  order.insert(order.end(), cols.begin(), cols.end());
  Shape perm;
  for (int l : lo) perm.push_back(position(order, l));
  return y.permute(perm).contiguous();
}

}  // namespace

std::vector<Tensor> Einsum::run(const std::vector<Tensor>& in) {
  for (std::size_t i = 0; i < in.size(); ++i)
    REFOLD_CHECK(in[i].defined(), "Einsum: input {} is missing", i);
  const bool floating = !in.empty() && std::all_of(in.begin(), in.end(), [&](const Tensor& t) {
    return t.dtype() == in[0].dtype() && is_floating(t.dtype());
  });
  if (in.size() == 2 && floating)
    if (auto y = einsum_as_matmul(equation_, in[0], in[1])) return {*y};
  if (in.size() == 1 && floating) {  // a permutation: "nchw->nhwc"
    const reference::EinsumLabels labels = reference::einsum_labels(equation_, {in[0].sizes()});
    const std::vector<int>& li = labels.inputs[0];
    if (distinct(li) && li.size() == labels.output.size()) {
      Shape perm;
      for (int l : labels.output) perm.push_back(position(li, l));
      return {reference::transpose(in[0], perm)};
    }
  }
  return {reference::einsum(equation_, in)};
}

nn::ModulePtr build_gemm(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 2, 3, 1);
  const graph::Attributes& a = node.attributes;
  GemmAttributes g;
  g.alpha = a.get_float("alpha", 1.0f);
  g.beta = a.get_float("beta", 1.0f);
  for (const char* name : {"transA", "transB"}) {
    const std::int64_t v = a.get_int(name, 0);
    REFOLD_CHECK(v == 0 || v == 1, "{} must be 0 or 1 (got {})", name, v);
  }
  g.trans_a = a.get_int("transA", 0) == 1;
  g.trans_b = a.get_int("transB", 0) == 1;
  const bool has_c = !input_name(node, 2).empty();

  if (!is_constant_input(context.graph, node, 1)) return std::make_shared<Gemm>(g);
  const Tensor& b = context.graph.constant(node.inputs[1]);
  REFOLD_CHECK(b.dim() == 2, "B must be 2-d, got [{}]", fmt::join(b.sizes(), ", "));
  check_floating(b, "B");
  // B' = transB ? Bᵀ : B is [K, N]
  const std::int64_t k = g.trans_b ? b.size(1) : b.size(0);
  const std::int64_t n = g.trans_b ? b.size(0) : b.size(1);
  if (is_constant_input(context.graph, node, 0)) {  // F28, when A is known now
    const Tensor& at = context.graph.constant(node.inputs[0]);
    REFOLD_CHECK(at.dim() == 2, "A must be 2-d, got [{}]", fmt::join(at.sizes(), ", "));
    const std::int64_t ka = g.trans_a ? at.size(0) : at.size(1);
    REFOLD_CHECK(ka == k,
                 "inner dimensions differ: A' has K = {} but B' has K = {} (transA {}, transB {})",
                 ka, k, g.trans_a ? 1 : 0, g.trans_b ? 1 : 0);
  }
  // y = A · Bᵀ + C with B [N, K] and C [N] is nn::Linear(K, N) with weight B and bias C.
  const bool c_const = !has_c || is_constant_input(context.graph, node, 2);
  bool linear = !g.trans_a && g.trans_b && g.alpha == 1.0 && c_const && k > 0 && n > 0;
  if (linear && has_c) {
    const Tensor& c = context.graph.constant(node.inputs[2]);
    linear = g.beta == 1.0 && c.dim() == 1 && c.size(0) == n && c.dtype() == b.dtype();
  }
  if (!linear) return std::make_shared<Gemm>(g);
  return std::make_shared<nn::Linear>(nn::LinearOptions(k, n).bias(has_c), b,
                                      has_c ? context.graph.constant(node.inputs[2]) : Tensor());
}

nn::ModulePtr build_mat_mul(const BuildContext& context) {
  check_arity(context.node, 2, 2, 1);
  return std::make_shared<MatMul>();
}

// Einsum-12: the equation attribute (required) over any number of inputs.
nn::ModulePtr build_einsum(const BuildContext& context) {
  const graph::Node& node = context.node;
  check_arity(node, 1, node.inputs.size(), 1);
  REFOLD_CHECK(node.attributes.has("equation"), "the equation attribute is required");
  return std::make_shared<Einsum>(
      reference::parse_einsum(node.attributes.get_string("equation", ""), node.inputs.size()));
}

const std::vector<OpDef>& gemm_ops() {
  static const std::vector<OpDef> table = {
      {"Gemm", 7, build_gemm, LayoutRule::Fresh},  // v7: C broadcasts (v6 had `broadcast`)
      {"MatMul", 1, build_mat_mul, LayoutRule::Fresh},
      {"Einsum", 12, build_einsum, LayoutRule::Fresh},
  };
  return table;
}

}  // namespace refold::ops
