// Reference reductions (ONNX Reduce*, ArgMax/ArgMin): accumulated in double (int64 exactly),
// rounded once, any strides.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/reference/onnx_ops.h"
#include "kernels/reference/typed_elements.h"

namespace refold::reference {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The kept/reduced split of `input`'s axes: `to_output` maps an input index to the row-major
// offset of its output element (reduced axes contribute 0).
struct Reduction {
  Shape to_output;
  Shape out_sizes;
  std::int64_t count = 1;    // elements reduced into each output
  std::int64_t outputs = 1;  // output elements
};

Reduction plan(const Tensor& input, const std::vector<std::int64_t>& axes, bool keepdims,
               const char* name) {
  const auto rank = static_cast<std::size_t>(input.dim());
  std::vector<bool> reduced(rank, false);
  for (std::int64_t axis : axes) {
    const auto d = static_cast<std::size_t>(detail::wrap_axis(axis, input.dim(), name));
    REFOLD_CHECK(!reduced[d], "{}: axis {} is given twice", name, axis);
    reduced[d] = true;
  }
  Reduction r;
  r.to_output.assign(rank, 0);
  for (std::size_t d = rank; d-- > 0;) {
    if (reduced[d]) {
      r.count *= input.sizes()[d];
    } else {
      r.to_output[d] = r.outputs;
      r.outputs *= input.sizes()[d];
    }
  }
  for (std::size_t d = 0; d < rank; ++d) {
    if (!reduced[d])
      r.out_sizes.push_back(input.sizes()[d]);
    else if (keepdims)
      r.out_sizes.push_back(1);
  }
  return r;
}

// The accumulator's start (the value of a reduction over no elements, before reduce_finish()).
double identity(ReduceOp op) {
  switch (op) {
    case ReduceOp::Max:
      return -kInf;
    case ReduceOp::Min:
      return kInf;
    case ReduceOp::Prod:
      return 1.0;
    default:
      return 0.0;
  }
}

// NaN wins in Max and Min, as in NumPy.
double accumulate(ReduceOp op, double acc, double x) {
  switch (op) {
    case ReduceOp::Max:
      return std::isnan(acc) || std::isnan(x) ? acc + x : std::max(acc, x);
    case ReduceOp::Min:
      return std::isnan(acc) || std::isnan(x) ? acc + x : std::min(acc, x);
    case ReduceOp::Prod:
      return acc * x;
    case ReduceOp::L1:
      return acc + std::abs(x);
    case ReduceOp::L2:
    case ReduceOp::SumSquare:
      return acc + x * x;
    default:
      return acc + x;  // Mean, Sum, LogSum; LogSumExp adds e^(x − max) (see reduce())
  }
}

std::int64_t accumulate_int(ReduceOp op, std::int64_t acc, std::int64_t x) {
  const auto ua = static_cast<std::uint64_t>(acc), ux = static_cast<std::uint64_t>(x);
  switch (op) {
    case ReduceOp::Sum:
      return static_cast<std::int64_t>(ua + ux);  // wraps, as NumPy
    case ReduceOp::Prod:
      return static_cast<std::int64_t>(ua * ux);
    case ReduceOp::Max:
      return std::max(acc, x);
    case ReduceOp::Min:
      return std::min(acc, x);
    default:
      fail("{}: input has dtype int64; expected float32 or bfloat16", reduce_name(op));
  }
}

}  // namespace

double reduce_finish(ReduceOp op, double acc, std::int64_t count) {
  switch (op) {
    case ReduceOp::Mean:
      return count == 0 ? std::numeric_limits<double>::quiet_NaN() : acc / count;
    case ReduceOp::L2:
      return std::sqrt(acc);
    case ReduceOp::LogSum:
      return std::log(acc);
    default:
      return acc;
  }
}

const char* reduce_name(ReduceOp op) {
  static constexpr const char* names[] = {
      "ReduceMean", "ReduceSum", "ReduceMax",       "ReduceMin",    "ReduceProd",
      "ReduceL1",   "ReduceL2",  "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  return names[static_cast<int>(op)];
}

// y[i] = reduce_finish(⊕_{r ∈ R} x[i ⊕ r]) over the index box R of the reduced axes; the output is
// contiguous, x's sizes with the reduced axes 1 (keepdims) or dropped. LogSumExp subtracts each
// output's max first: log Σ e^x = m + log Σ e^(x − m), so no e^x overflows.
Tensor reduce(const Tensor& input, const std::vector<std::int64_t>& axes, bool keepdims,
              ReduceOp op) {
  const char* name = reduce_name(op);
  REFOLD_CHECK(input.defined(), "{}: input is undefined", name);
  const Reduction r = plan(input, axes, keepdims, name);
  const auto outputs = static_cast<std::size_t>(r.outputs);
  Tensor output = empty(r.out_sizes, input.dtype());
  if (input.dtype() == DType::Int64) {
    REFOLD_CHECK(r.count > 0 || op == ReduceOp::Sum || op == ReduceOp::Prod,
                 "{}: reducing an empty int64 axis has no value", name);
    const std::int64_t start = op == ReduceOp::Prod  ? 1
                               : op == ReduceOp::Max ? std::numeric_limits<std::int64_t>::min()
                               : op == ReduceOp::Min ? std::numeric_limits<std::int64_t>::max()
                                                     : 0;
    std::vector<std::int64_t> acc(outputs, start);
    const std::int64_t* in = input.data<std::int64_t>();
    for_each_index(input.sizes(), [&](const Shape& idx) {
      std::int64_t& a = acc[static_cast<std::size_t>(offset_of(idx, r.to_output))];
      a = accumulate_int(op, a, in[offset_of(idx, input.strides())]);
    });
    std::copy(acc.begin(), acc.end(), output.data<std::int64_t>());
    return output;
  }
  REFOLD_CHECK(is_floating(input.dtype()), "{}: input has dtype {}; expected float32 or bfloat16",
               name, dtype_name(input.dtype()));
  const void* in = input.data_ptr();
  const auto each = [&](auto&& f) {
    for_each_index(input.sizes(), [&](const Shape& idx) {
      f(static_cast<std::size_t>(offset_of(idx, r.to_output)),
        load_as_float(in, input.dtype(), offset_of(idx, input.strides())));
    });
  };
  std::vector<double> acc(outputs, identity(op));
  if (op == ReduceOp::LogSumExp) {
    std::vector<double> max(outputs, -kInf);
    each([&](std::size_t o, double x) { max[o] = accumulate(ReduceOp::Max, max[o], x); });
    each([&](std::size_t o, double x) {
      acc[o] += std::isinf(max[o]) ? std::exp(x) : std::exp(x - max[o]);
    });
    for (std::size_t o = 0; o < outputs; ++o)
      acc[o] = std::log(acc[o]) + (std::isinf(max[o]) ? 0.0 : max[o]);
  } else {
    each([&](std::size_t o, double x) { acc[o] = accumulate(op, acc[o], x); });
  }
  void* out = output.data_ptr();
  for (std::size_t o = 0; o < outputs; ++o) {
    const double y = op == ReduceOp::LogSumExp ? acc[o] : reduce_finish(op, acc[o], r.count);
    store_from_float(out, input.dtype(), static_cast<std::int64_t>(o),
                     round_to_dtype(y, input.dtype()));
  }
  return output;
}

// The index of the largest (smallest) element along `axis`: the first one, or the last with
// select_last_index. NaN counts as the largest and the smallest (NumPy's argmax/argmin).
Tensor arg_reduce(const Tensor& input, std::int64_t axis, bool keepdims, bool select_last,
                  bool max) {
  const char* name = max ? "ArgMax" : "ArgMin";
  REFOLD_CHECK(input.defined(), "{}: input is undefined", name);
  const std::int64_t d = detail::wrap_axis(axis, input.dim(), name);
  const std::int64_t n = input.sizes()[static_cast<std::size_t>(d)];
  REFOLD_CHECK(n > 0, "{}: axis {} is empty; there is no index to return", name, axis);
  Shape sizes = input.sizes();
  sizes[static_cast<std::size_t>(d)] = 1;
  Tensor output = empty(sizes, DType::Int64);
  std::int64_t* out = output.data<std::int64_t>();
  const std::int64_t step = input.strides()[static_cast<std::size_t>(d)];
  const void* in = input.data_ptr();
  const bool is_int = input.dtype() == DType::Int64;
  const auto value = [&](std::int64_t offset) {
    return is_int ? static_cast<double>(input.data<std::int64_t>()[offset])
                  : static_cast<double>(load_as_float(in, input.dtype(), offset));
  };
  std::int64_t o = 0;
  for_each_index(sizes, [&](const Shape& idx) {
    const std::int64_t base = offset_of(idx, input.strides());
    std::int64_t best = 0;
    double best_value = value(base);
    for (std::int64_t i = 1; i < n && !std::isnan(best_value); ++i) {
      const double v = value(base + i * step);
      const bool better = std::isnan(v) || (max ? v > best_value : v < best_value) ||
                          (select_last && v == best_value);
      if (better) {
        best = i;
        best_value = v;
      }
    }
    out[o++] = best;
  });
  if (!keepdims) sizes.erase(sizes.begin() + d);
  return output.reshape(sizes);
}

}  // namespace refold::reference
