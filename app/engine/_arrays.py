"""Input checks shared by the engine: the dtype rule and integer arguments.

Floating arrays keep their dtype; integer and boolean arrays become float64.
"""

from __future__ import annotations

import operator

import numpy as np


def float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The dtype the engine computes in for these arrays.

    NumPy's promotion of the arrays' dtypes, except that integers and booleans count as
    float64, so float32 inputs stay float32 and anything mixed with float64 is float64.
    """
    dtypes = []
    for array in arrays:
        if array.dtype.kind == "f":
            dtypes.append(array.dtype)
        elif array.dtype.kind in "iub":
            dtypes.append(np.dtype(np.float64))
        else:
            raise ValueError(
                f"expected real numbers, got an array of dtype {array.dtype}: "
                "the engine works with float32 or float64 (integers are promoted to float64)"
            )
    return np.result_type(*dtypes)


def as_float_arrays(*values, names: tuple[str, ...]) -> list[np.ndarray]:
    """Convert each value to an array in the engine's common float dtype."""
    arrays = [np.asarray(value) for value in values]
    for array, name in zip(arrays, names):
        if array.dtype.kind not in "fiub":
            raise ValueError(
                f"{name} must hold real numbers, got dtype {array.dtype}: "
                "the engine works with float32 or float64 (integers are promoted to float64)"
            )
    dtype = float_dtype(*arrays)
    return [array.astype(dtype, copy=False) for array in arrays]


def check_count(value, name: str, minimum: int) -> int:
    """A whole number >= minimum, as a Python int (bools and floats are refused)."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be an integer, got the boolean {value!r}")
    try:
        count = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if count < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {count}")
    return int(count)
