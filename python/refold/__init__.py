"""refold: fast convolutional networks on CPUs.

An ONNX optimizer that folds BatchNorm, collapses multi-branch blocks (RepVGG, ACNet, DBB,
MobileOne, RepConv, …) into single convolutions, plans the channels_last layout with the fewest
permutes and proves every rewrite numerically; and a runtime on oneDNN plus refold's own AVX2
kernels.

    import refold
    report = refold.optimize("model.onnx", "model.fast.onnx")   # verify=True by default
    print(report)                                                # as `refold optimize` prints

    session = refold.Session("model.onnx")                       # optimized once
    (logits,) = session.run(None, {"input": x})                  # NumPy or torch tensors in

    session = refold.from_torch(module, torch.randn(1, 3, 224, 224))

Errors are refold.Error (a ValueError) with a message that names the node and the value.
"""

from ._refold import (
    MODEL_TOLERANCE,
    Error,
    OptimizeReport,
    Session,
    __version__,
    get_flush_denormal,
    get_num_threads,
    optimize,
    set_flush_denormal,
    set_num_threads,
)
from ._torch import from_torch
from ._types import ValueInfo

__all__ = [
    "MODEL_TOLERANCE",
    "Error",
    "OptimizeReport",
    "Session",
    "ValueInfo",
    "__version__",
    "from_torch",
    "get_flush_denormal",
    "get_num_threads",
    "optimize",
    "set_flush_denormal",
    "set_num_threads",
]
