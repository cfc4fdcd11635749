// Reference Gemm and MatMul (ONNX). See kernels/reference/onnx_ops.h.
#include <fmt/ranges.h>

#include "core/check.h"
#include "core/element_access.h"
#include "kernels/reference/binary_checks.h"
#include "kernels/reference/onnx_ops.h"

namespace refold::reference {
namespace {

void check_float_operand(const Tensor& t, const char* op, const char* name) {
  REFOLD_CHECK(t.defined(), "{}: {} is undefined", op, name);
  REFOLD_CHECK(is_floating(t.dtype()), "{}: {} has dtype {}; expected float32 or bfloat16", op,
               name, dtype_name(t.dtype()));
}

}  // namespace

Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c, double alpha, double beta,
            bool trans_a, bool trans_b) {
  check_float_operand(a, "Gemm", "A");
  check_float_operand(b, "Gemm", "B");
  REFOLD_CHECK(a.dim() == 2 && b.dim() == 2, "Gemm: A and B must be 2-d, got [{}] and [{}]",
               fmt::join(a.sizes(), ", "), fmt::join(b.sizes(), ", "));
  REFOLD_CHECK(a.dtype() == b.dtype(), "Gemm: A has dtype {} but B has {}", dtype_name(a.dtype()),
               dtype_name(b.dtype()));
  // A' = transA ? Aᵀ : A is [M, K]; B' = transB ? Bᵀ : B is [K, N].
  const Tensor at = trans_a ? a.permute({1, 0}) : a;
  const Tensor bt = trans_b ? b.permute({1, 0}) : b;
  const std::int64_t m = at.size(0), k = at.size(1), n = bt.size(1);
  REFOLD_CHECK(bt.size(0) == k,
               "Gemm: inner dimensions differ: A' is [{}, {}] and B' is [{}, {}] (transA {}, "
               "transB {})",
               m, k, bt.size(0), n, trans_a ? 1 : 0, trans_b ? 1 : 0);
  Shape c_strides{0, 0};
  if (c.defined()) {
    check_float_operand(c, "Gemm", "C");
    const Shape out = detail::broadcast_shape(c.sizes(), {m, n}, "Gemm");
    REFOLD_CHECK(out == (Shape{m, n}), "Gemm: C [{}] does not broadcast to [{}, {}]",
                 fmt::join(c.sizes(), ", "), m, n);
    const std::size_t lead = 2 - c.sizes().size();
    for (std::size_t d = 0; d < c.sizes().size(); ++d)
      if (c.sizes()[d] != 1) c_strides[lead + d] = c.strides()[d];
  }
  Tensor output = empty({m, n}, a.dtype());
  const FloatReader ra(at), rb(bt);
  const FloatWriter out(output);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (std::int64_t p = 0; p < k; ++p)
        acc += static_cast<double>(ra.at_offset(i * ra.stride(0) + p * ra.stride(1))) *
               rb.at_offset(p * rb.stride(0) + j * rb.stride(1));
      double y = alpha * acc;
      if (c.defined()) {
        const FloatReader rc(c);
        y += beta * rc.at_offset(i * c_strides[0] + j * c_strides[1]);
      }
      out.set_offset(i * out.stride(0) + j * out.stride(1), round_to_dtype(y, a.dtype()));
    }
  }
  return output;
}

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_float_operand(a_in, "MatMul", "A");
  check_float_operand(b_in, "MatMul", "B");
  REFOLD_CHECK(a_in.dtype() == b_in.dtype(), "MatMul: A has dtype {} but B has {}",
               dtype_name(a_in.dtype()), dtype_name(b_in.dtype()));
  REFOLD_CHECK(a_in.dim() >= 1 && b_in.dim() >= 1, "MatMul: operands must be at least 1-d");
  // numpy.matmul: a 1-d A is [1, K] (the 1 removed after), a 1-d B is [K, 1] (likewise).
  const bool a_vec = a_in.dim() == 1, b_vec = b_in.dim() == 1;
  const Tensor a = a_vec ? a_in.reshape({1, a_in.size(0)}) : a_in;
  const Tensor b = b_vec ? b_in.reshape({b_in.size(0), 1}) : b_in;
  const std::int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  REFOLD_CHECK(b.size(-2) == k,
               "MatMul: A [{}] and B [{}] have different inner dimensions ({} vs {})",
               fmt::join(a_in.sizes(), ", "), fmt::join(b_in.sizes(), ", "), k, b.size(-2));
  const Shape a_batch(a.sizes().begin(), a.sizes().end() - 2);
  const Shape b_batch(b.sizes().begin(), b.sizes().end() - 2);
  const Shape batch = detail::broadcast_shape(a_batch, b_batch, "MatMul");
  // Batch strides of each operand at the broadcast batch index (0 on broadcast dims).
  auto batch_strides = [&](const Tensor& t, const Shape& t_batch) {
    Shape s(batch.size(), 0);
    const std::size_t lead = batch.size() - t_batch.size();
    for (std::size_t d = 0; d < t_batch.size(); ++d)
      if (t_batch[d] != 1) s[lead + d] = t.strides()[d];
    return s;
  };
  const Shape as = batch_strides(a, a_batch), bs = batch_strides(b, b_batch);
  Shape out_sizes = batch;
  out_sizes.push_back(m);
  out_sizes.push_back(n);
  Tensor output = empty(out_sizes, a.dtype());
  const FloatReader ra(a), rb(b);
  const FloatWriter out(output);
  const std::int64_t am = a.stride(-2), ak = a.stride(-1), bk = b.stride(-2), bn = b.stride(-1);
  const Shape os = output.strides();
  const Shape out_batch_strides(os.begin(), os.end() - 2);
  const std::int64_t om = output.stride(-2), on = output.stride(-1);
  for_each_index(batch, [&](const Shape& idx) {
    const std::int64_t a0 = offset_of(idx, as), b0 = offset_of(idx, bs);
    const std::int64_t o0 = offset_of(idx, out_batch_strides);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (std::int64_t p = 0; p < k; ++p)
          acc += static_cast<double>(ra.at_offset(a0 + i * am + p * ak)) *
                 rb.at_offset(b0 + p * bk + j * bn);
        out.set_offset(o0 + i * om + j * on, round_to_dtype(acc, a.dtype()));
      }
  });
  // Drop the promoted dims.
  Shape final_sizes = batch;
  if (!a_vec) final_sizes.push_back(m);
  if (!b_vec) final_sizes.push_back(n);
  return output.reshape(final_sizes);
}

}  // namespace refold::reference
