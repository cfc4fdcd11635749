#include "ops/tensor_values.h"

#include "core/check.h"
#include "kernels/reference/typed_elements.h"

namespace refold::ops {
namespace {

void check_vector(const Tensor& t, const char* op, const char* what) {
  REFOLD_CHECK(t.defined(), "{}: {} is missing", op, what);
  REFOLD_CHECK(t.dim() <= 1, "{}: {} must be 1-d, got shape [{}]", op, what,
               fmt::join(t.sizes(), ", "));
}

}  // namespace

std::vector<std::int64_t> int64_vector(const Tensor& t, const char* op, const char* what) {
  check_vector(t, op, what);
  REFOLD_CHECK(t.dtype() == DType::Int64, "{}: {} has dtype {}; expected int64", op, what,
               dtype_name(t.dtype()));
  return reference::detail::int64_values(t);
}

std::vector<double> float_vector(const Tensor& t, const char* op, const char* what) {
  check_vector(t, op, what);
  REFOLD_CHECK(is_floating(t.dtype()), "{}: {} has dtype {}; expected float32", op, what,
               dtype_name(t.dtype()));
  std::vector<double> values;
  for (float v : t.to_vector()) values.push_back(v);
  return values;
}

}  // namespace refold::ops
