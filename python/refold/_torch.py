"""refold.from_torch: a torch.nn.Module to an optimized, verified refold.Session."""

import copy
import inspect
import io
from typing import Any, Optional, Sequence, Union

from ._refold import MODEL_TOLERANCE, Error, Session


def _flatten(value: Any) -> list:
    """The tensors of a module's output (a tensor, or tuples/lists/dicts of them), in order."""
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _flatten(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _flatten(v)]
    raise Error(f"from_torch: the module returned a {type(value).__name__}, not tensors")


def from_torch(
    module: "torch.nn.Module",
    example_inputs: Union["torch.Tensor", Sequence["torch.Tensor"]],
    *,
    verify: bool = True,
    threads: Optional[int] = None,
    opset_version: int = 17,
) -> Session:
    """Exports `module` to ONNX as given (training-form blocks included, in eval mode),
    optimizes it (BatchNorm folding, re-parameterization, layout) and, with `verify`, checks the
    Session's outputs against the module's own on `example_inputs`: max|refold − torch| <=
    MODEL_TOLERANCE * max(1, max|torch|) for every output, else refold.Error. Returns the
    Session. The user's module is never modified: a deep copy is exported.

    The export uses the TorchScript-based exporter (dynamo=False where the installed torch has
    that switch) at `opset_version`; inputs are named input0, input1, … (or "input" for one).
    """
    import torch

    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    inputs = tuple(example_inputs)
    if not inputs or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise Error("from_torch: example_inputs must be a tensor or a sequence of tensors")
    model = copy.deepcopy(module).eval()
    names = ["input"] if len(inputs) == 1 else [f"input{i}" for i in range(len(inputs))]
    options = {}
    if "dynamo" in inspect.signature(torch.onnx.export).parameters:
        options["dynamo"] = False
    buffer = io.BytesIO()
    with torch.no_grad():
        expected = _flatten(model(*inputs))
        torch.onnx.export(
            model,
            inputs,
            buffer,
            opset_version=opset_version,
            input_names=names,
            training=torch.onnx.TrainingMode.EVAL,
            **options,
        )
    session = Session(buffer.getvalue(), optimize=True, threads=threads)
    if verify:
        got = session.run(None, [t.detach() for t in inputs])
        if len(got) != len(expected):
            raise Error(f"from_torch: the model gives {len(got)} outputs, the module {len(expected)}")
        for i, (a, e) in enumerate(zip(got, expected)):
            ref = e.detach().to(torch.float32).numpy()
            diff = float(abs(a.astype("float64") - ref).max()) if ref.size else 0.0
            scale = max(1.0, float(abs(ref).max()) if ref.size else 0.0)
            if not diff <= MODEL_TOLERANCE * scale:
                raise Error(
                    f"from_torch: output {i} differs from the module's by {diff:.3g} "
                    f"(max |torch| {scale:.3g}, tolerance {MODEL_TOLERANCE:g} * max(1, max|torch|))"
                )
    return session
