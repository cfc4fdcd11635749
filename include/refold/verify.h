// refold::verify — how far a transformed model's outputs are from the original's.
//
//   auto fused = build_model(); fused->load_state_dict(original->state_dict());
//   refold::reparameterize(*fused);
//   VerifyResult r = refold::verify(*original, *fused, {randn({1, 3, 224, 224})});
//   if (!r.within()) …   // docs/testing.md's re-parameterization tolerance
//
// Each input runs through both models (the original is the reference); per input the result
// holds the largest absolute difference and that difference relative to the reference output's
// largest magnitude. The relative error is taken against the output's scale, not element by
// element: an element-wise ratio is unbounded wherever the reference is ~0 (after a ReLU, for
// instance), which says nothing about the transformation.
// A NaN in one output where the other has a number is an infinite error; NaN in both agrees.
#pragma once

#include <string>
#include <vector>

#include "refold/nn/module.h"
#include "refold/tensor.h"

namespace refold {

struct OutputError {
  double max_abs_error = 0;      // max |transformed − original|
  double max_rel_error = 0;      // max_abs_error / max |original| (0 when both are all zeros)
  double reference_max_abs = 0;  // max |original|
  // docs/testing.md's re-parameterization tolerance:
  //   max|a − b| ≤ tolerance · max(1, max|original|).
  bool within(double tolerance = 1e-4) const;
};

struct VerifyResult {
  std::vector<OutputError> outputs;  // one per input, in order

  double max_abs_error() const;  // over all outputs (0 when there are none)
  double max_rel_error() const;
  bool within(double tolerance = 1e-4) const;  // every output within
  std::string to_string() const;               // one line per output
};

// Runs `original` and `transformed` on every input. Throws refold::Error ("verify: …") when
// `inputs` is empty, an input is undefined, or the two outputs of one input differ in shape.
VerifyResult verify(nn::Module& original, nn::Module& transformed,
                    const std::vector<Tensor>& inputs);

}  // namespace refold
