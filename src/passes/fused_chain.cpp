#include "passes/fused_chain.h"

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/elementwise_chain.h"
#include "kernels/post_ops.h"
#include "ops/arithmetic.h"

namespace refold::passes {

ElementwiseChain::ElementwiseChain(PostOps post, bool x_first)
    : Op("ElementwiseChain"), post_(std::move(post)), x_first_(x_first) {
  REFOLD_CHECK(!post_.residual.defined(), "ElementwiseChain: the residual is an input");
}

std::vector<Tensor> ElementwiseChain::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() >= 2, "{}: expects at least 2 inputs (x, residual), got {}",
               type_name(), inputs.size());
  const Tensor& x = inputs[0];
  const Tensor& r = inputs[1];
  REFOLD_CHECK(x.defined(), "{}: input x is undefined", type_name());
  REFOLD_CHECK(r.defined() || !post_.residual_in_steps(), "{}: the residual is undefined",
               type_name());
  PostOps post = post_;
  post.residual = r;
  if (!r.defined() || (r.sizes() == x.sizes() && r.dtype() == x.dtype())) {
    return {dispatch(
        "elementwise_chain",
        {{"native",
          [&](std::string* declined) { return native::elementwise_chain(x, post, declined); }}},
        [&] { return reference::apply_post_ops(x, post); })};
  }
  // Unfused: the chain with the residual added by ONNX Add (broadcasting), as the Add node did.
  ops::Binary add(reference::ArithOp::Add);
  return {reference::apply_post_ops(x, post, [&](const Tensor& v) {
    return add.run(x_first_ ? std::vector<Tensor>{v, r} : std::vector<Tensor>{r, v})[0];
  })};
}

}  // namespace refold::passes
