"""Input checks for the engine: the dtype rule, whole numbers, shapes, masks, temperature.

Each failure is a ValueError whose message says what was expected and what was given.
"""

from __future__ import annotations

import math
import operator

import numpy as np


def as_float_arrays(*values, names: tuple[str, ...]) -> list[np.ndarray]:
    """The values as arrays in one float dtype: NumPy's promotion, with integers counting as float64.

    So float32 stays float32, anything mixed with float64 is float64, and integers become float64.
    """
    arrays = [np.asarray(value) for value in values]
    for array, name in zip(arrays, names):
        if array.dtype.kind not in "fiub":
            raise ValueError(
                f"{name} must hold real numbers, got dtype {array.dtype}: "
                "the engine works with float32 or float64 (integers are promoted to float64)"
            )
    dtype = np.result_type(*(a.dtype if a.dtype.kind == "f" else np.float64 for a in arrays))
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


def check_qkv(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[int, ...]:
    """Check q (..., N, d), k (..., M, d), v (..., M, l) fit together; return the weights' shape."""
    for name, array in (("q", q), ("k", k), ("v", v)):
        if array.ndim < 2:
            raise ValueError(
                f"{name} must have shape (..., length, features), got shape {array.shape}"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            "q and k must have the same last dimension d, because each score is a dot product "
            f"q·k; got q of shape {q.shape} and k of shape {k.shape}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            "k and v must have the same length M, because each key has one value; "
            f"got k of shape {k.shape} and v of shape {v.shape}"
        )
    if q.shape[-1] == 0:
        raise ValueError(
            "q and k need at least one feature: the scale 1/sqrt(d) is undefined for d = 0"
        )
    try:
        np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch/head) dimensions of q {q.shape}, k {k.shape} and v {v.shape} "
            "do not broadcast together"
        ) from None
    # The weights have the leading dimensions of q kᵀ (v's may add more to the output's).
    return (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])


def check_mask(mask, weights_shape: tuple[int, ...]) -> np.ndarray | None:
    """A boolean mask (True = may attend) that broadcasts to the weights' shape, or None."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(
            f"mask must be boolean with True meaning 'may attend', got dtype {mask.dtype}; "
            "convert a 0/1 mask with mask.astype(bool) (an additive -inf mask is not accepted)"
        )
    try:
        fits = np.broadcast_shapes(mask.shape, weights_shape) == tuple(weights_shape)
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to the attention weights' "
            f"shape {tuple(weights_shape)} (queries x keys)"
        )
    return mask


def check_temperature(temperature) -> float:
    """A finite float > 0."""
    try:
        value = float(temperature)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"temperature must be a finite number > 0, got {temperature!r}: it divides the scores, "
            "so 0 is the hard-attention limit (use hard_attention) and a negative value would "
            "reverse the ranking of keys"
        )
    return value
