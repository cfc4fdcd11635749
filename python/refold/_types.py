"""Plain data types of the Python API."""

from typing import NamedTuple, Optional, Tuple, Union


class ValueInfo(NamedTuple):
    """A model input or output as declared: its name, its shape (None when the rank is unknown;
    a symbolic dim is its name, an unknown dim None) and its NumPy dtype name."""

    name: str
    shape: Optional[Tuple[Union[int, str, None], ...]]
    dtype: str
