"""Sinusoidal positional encodings (Vaswani et al. 2017, §3.5), in the interleaved layout.

Attention alone ignores order; adding PE[p] to the token at position p gives it back.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import check_count


def sinusoidal_positional_encoding(
    length: int, d_model: int, base: float = 10000.0, dtype=np.float64
) -> np.ndarray:
    """The (length, d_model) table PE[p, 2i] = sin(p w_i), PE[p, 2i+1] = cos(p w_i).

    w_i = base^(-2i/d) with d = d_model, i.e. PE[p, 2i] = sin(p / base^(2i/d)). Columns 2i
    and 2i+1 share the frequency w_i, so PE[p] · PE[p+k] = sum_i cos(k w_i) depends only on
    the offset k. For odd d_model the last column is a sine with no cosine partner.
    Computed in float64, returned in dtype.
    """
    length = check_count(length, "length", 0)
    d_model = check_count(d_model, "d_model", 1)
    try:
        base_value = float(base)
    except (TypeError, ValueError):
        base_value = math.nan
    if not (math.isfinite(base_value) and base_value > 0):
        raise ValueError(f"base must be a finite number > 0, got {base!r}")
    base = base_value
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise ValueError(f"dtype must be a floating type such as np.float32, got {dtype}")

    positions = np.arange(length, dtype=np.float64)[:, np.newaxis]  # (length, 1)
    pair_index = np.arange(0, d_model, 2, dtype=np.float64)  # 2i for each sine column
    frequencies = base ** (-pair_index / d_model)  # (ceil(d/2),)  w_i = base^(-2i/d)
    angles = positions * frequencies  # (length, ceil(d/2))

    encoding = np.empty((length, d_model), dtype=np.float64)
    encoding[:, 0::2] = np.sin(angles)
    # Odd d_model has one cosine column fewer than sine columns.
    encoding[:, 1::2] = np.cos(angles[:, : d_model // 2])
    return encoding.astype(dtype, copy=False)
