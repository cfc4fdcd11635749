"""Type stubs of refold's C++ core (python/src/refold_module.cpp)."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ._types import ValueInfo

__version__: str
MODEL_TOLERANCE: float

ModelSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview]
ArrayLike = Any  # a NumPy array, a CPU torch tensor, anything with __dlpack__ or __array__

class Error(ValueError):
    """refold's one error type: the message names the node or tensor and the offending value."""

class OptimizeReport:
    """What refold.optimize did. str(report) reads as `refold optimize` prints."""

    @property
    def op_counts_before(self) -> Dict[str, int]: ...
    @property
    def op_counts_after(self) -> Dict[str, int]: ...
    @property
    def passes(self) -> List[Dict[str, Any]]:
        """One dict per pass: {'pass', 'changed', 'notes'}."""
    @property
    def layout(self) -> Dict[str, Any]:
        """{'convs', 'channels_last_weights', 'nchw_convs', 'permutes', 'permute_list'}."""
    @property
    def layout_plan(self) -> str: ...
    @property
    def max_error(self) -> Optional[float]:
        """max |optimized − original| of the verification (None: not verified)."""
    @property
    def model(self) -> bytes:
        """The optimized model as ONNX bytes."""
    def save(self, path: Union[str, "os.PathLike[str]"]) -> None: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_string(self, verbose: bool = False) -> str: ...

def optimize(
    src: ModelSource,
    dst: Union[str, "os.PathLike[str]", None] = None,
    *,
    verify: bool = True,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    disable: Sequence[str] = (),
) -> OptimizeReport: ...

class Session:
    """An ONNX model loaded, optimized once, run many times (thread-safe; run() releases the GIL)."""

    def __init__(
        self,
        model: ModelSource,
        *,
        optimize: bool = True,
        verify: bool = False,
        threads: Optional[int] = None,
        input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
        disable: Sequence[str] = (),
    ) -> None: ...
    def run(
        self,
        outputs: Optional[Sequence[str]] = None,
        inputs: Union[Mapping[str, ArrayLike], Sequence[ArrayLike]] = ...,
    ) -> List[np.ndarray]: ...
    def profile(self, inputs: Union[Mapping[str, ArrayLike], Sequence[ArrayLike]]) -> Dict[str, Any]: ...
    @property
    def inputs(self) -> List[ValueInfo]: ...
    @property
    def outputs(self) -> List[ValueInfo]: ...
    @property
    def threads(self) -> Optional[int]: ...
    @property
    def closed(self) -> bool: ...
    def report(self) -> Dict[str, Any]: ...
    def report_text(self, verbose: bool = False) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Session": ...
    def __exit__(self, *args: Any) -> None: ...

def set_num_threads(n: int) -> None: ...
def get_num_threads() -> int: ...
def set_flush_denormal(flush: bool) -> None: ...
def get_flush_denormal() -> bool: ...
def _cli(args: Sequence[str]) -> int: ...
