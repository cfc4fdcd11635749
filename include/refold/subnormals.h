// How refold's kernels treat subnormal floats (|x| < 2⁻¹²⁶ ≈ 1.2e−38, "denormals").
//
// By default every model run (refold::Session, graph::Graph, and the outermost nn::Module call)
// treats subnormal inputs as zero and rounds subnormal results to zero, on the calling thread and
// on every thread of its kernels, and restores each thread's previous setting when it returns.
// x86 cores compute a subnormal operand or result in microcode, tens to hundreds of cycles per
// instruction: a softmax over masked logits (Swin's shifted windows add −100 before it) gives
// probabilities of ≈ 1e−40, and the matmul that reads them ran 20× slower. The change to any
// value is below 1.2e−38 in magnitude. PyTorch's torch.set_flush_denormal(True) is the same
// switch, off there by default.
#pragma once

namespace refold {

// Process-wide; applies to the runs that start after it. The environment variable
// REFOLD_FLUSH_DENORMAL=0 sets the default to false (read once, on first use).
void set_flush_denormal(bool flush);
// The current setting. Throws refold::Error if REFOLD_FLUSH_DENORMAL is set to anything but 0 or 1.
bool get_flush_denormal();

}  // namespace refold
