#include "passes/fused_chain.h"

#include "core/check.h"
#include "kernels/dispatch.h"
#include "kernels/native/elementwise_chain.h"
#include "kernels/post_ops.h"
#include "ops/arithmetic.h"
#include "refold/functional.h"
#include "refold/reference.h"

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
    // The output takes x's layout (the chain's input; reference::detail::layout_operand's
    // rule); a residual in the other layout is permuted into it first (one permute, which the
    // layout plan counts), so that the chain runs as one native pass, not the reference's.
    if (r.defined()) post.residual = functional::to_format(r, x.suggest_memory_format());
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

ConcatChain::ConcatChain(std::size_t count, PostOps post)
    : Op("ConcatChain"), count_(count), post_(std::move(post)) {
  REFOLD_CHECK(count_ > 0, "ConcatChain: no inputs to concatenate");
  REFOLD_CHECK(!post_.residual.defined() && !post_.residual_in_steps(),
               "ConcatChain: a chain with a residual");
}

std::vector<Tensor> ConcatChain::run(const std::vector<Tensor>& inputs) {
  REFOLD_CHECK(inputs.size() >= count_, "{}: expects at least {} inputs, got {}", type_name(),
               count_, inputs.size());
  const std::vector<Tensor> xs(inputs.begin(),
                               inputs.begin() + static_cast<std::ptrdiff_t>(count_));
  // Fused, one pass; else the concat, then the chain in one pass (other layouts); the
  // reference for what those decline (and to reject what is invalid).
  return {dispatch(
      "concat_chain",
      {{"native", [&](std::string* declined) { return native::concat_chain(xs, post_, declined); }},
       {"cat, then elementwise_chain",
        [&](std::string*) {
          return ElementwiseChain(post_, true).run({functional::cat(xs, 1), {}})[0];
        }}},
      [&] { return reference::apply_post_ops(reference::cat(xs, 1), post_); })};
}

}  // namespace refold::passes
