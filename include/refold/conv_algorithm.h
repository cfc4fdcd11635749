// Which algorithm refold's convolutions use.
//
//   Auto    (default) 3×3 stride-1 float32 convs on channels_last activations with enough
//           channels run refold's own Winograd kernel where this CPU has AVX2 and FMA, with
//           4×4 or 2×2 output tiles chosen per layer (4× or 2.25× fewer multiplications;
//           outputs differ from the direct conv by rounding only, within the fp32 tolerance of
//           docs/testing.md); strided float32 convs with enough channels run refold's own
//           direct conv; every other conv runs oneDNN's (docs/native-kernels.md).
//   Direct  oneDNN's direct kernel for every conv (the reference point in benchmarks).
//   Native  refold's own kernels for every conv they can compute (Winograd for 3×3 stride-1
//           convs, the direct conv for strided ones, float32 channels_last with the channel
//           multiples they need), also where the measured rules say oneDNN's is faster: to test
//           and time them on any CPU.
//
// The environment variable REFOLD_CONV_ALGORITHM ("auto", "direct" or "native", read once, on
// first use)
// sets the default. The setting is process-wide and applies to every call made after it.
// REFOLD_VERBOSE=1 prints, for each conv, which kernel ran and why the faster ones declined.
#pragma once

#include <string_view>

namespace refold {

enum class ConvAlgorithm { Auto, Direct, Native };

void set_conv_algorithm(ConvAlgorithm algorithm);
// The current setting. Throws refold::Error if REFOLD_CONV_ALGORITHM is set to anything but
// "auto", "direct" or "native".
ConvAlgorithm get_conv_algorithm();

std::string_view conv_algorithm_name(ConvAlgorithm algorithm);  // "auto", "direct", "native"
// "auto" / "direct" / "native" → the algorithm; anything else throws refold::Error naming the
// text.
ConvAlgorithm parse_conv_algorithm(std::string_view text);

}  // namespace refold
