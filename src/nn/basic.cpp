#include "refold/nn/basic.h"

#include "core/check.h"
#include "refold/functional.h"

namespace refold::nn {

// start_dim/end_dim depend on the input's rank, so the kernel validates them per call.
Tensor Flatten::forward(const Tensor& input) {
  return functional::flatten(input, options_.start_dim(), options_.end_dim());
}

PixelShuffle::PixelShuffle(const PixelShuffleOptions& options)
    : Module("PixelShuffle"), options_(options) {
  REFOLD_CHECK(options_.upscale_factor() > 0, "PixelShuffle: upscale_factor ({}) must be positive",
               options_.upscale_factor());
}

Tensor PixelShuffle::forward(const Tensor& input) {
  return functional::pixel_shuffle(input, options_.upscale_factor());
}

}  // namespace refold::nn
