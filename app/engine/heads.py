"""Splitting d_model features into attention heads and merging them back.

Head i owns feature columns i*head_dim:(i+1)*head_dim, as in nanoGPT and torch's MHA.
"""

from __future__ import annotations

import numpy as np

from ._checks import check_count


def check_head_split(d_model: int, num_heads) -> int:
    """Validate num_heads against d_model and return head_dim = d_model // num_heads."""
    num_heads = check_count(num_heads, "num_heads", 1)
    if d_model % num_heads != 0:
        raise ValueError(
            f"d_model={d_model} is not divisible by num_heads={num_heads}: each head gets "
            f"d_model / num_heads features, so choose num_heads that divides d_model"
        )
    return d_model // num_heads


def split_heads(x, num_heads: int) -> np.ndarray:
    """(..., N, d_model) -> (..., h, N, head_dim), head i taking columns i*head_dim:(i+1)*head_dim.

    A pure rearrangement: the dtype is unchanged (integer index arrays stay integers, handy
    for showing which column lands in which head). The result is C-contiguous, so the
    per-head matrix products that follow run in BLAS.
    """
    x = np.asarray(x)
    if x.ndim < 2:
        raise ValueError(f"split_heads needs shape (..., N, d_model), got shape {x.shape}")
    *batch_shape, length, d_model = x.shape
    head_dim = check_head_split(d_model, num_heads)
    heads = x.reshape(*batch_shape, length, num_heads, head_dim)  # (..., N, h, head_dim)
    heads = np.swapaxes(heads, -3, -2)  # (..., h, N, head_dim)
    return np.ascontiguousarray(heads)


def merge_heads(x) -> np.ndarray:
    """(..., h, N, head_dim) -> (..., N, h * head_dim): the inverse of split_heads.

    Concatenates the heads' features in head order, so head i fills columns
    i*head_dim:(i+1)*head_dim. The dtype is unchanged.
    """
    x = np.asarray(x)
    if x.ndim < 3:
        raise ValueError(f"merge_heads needs shape (..., h, N, head_dim), got shape {x.shape}")
    *batch_shape, num_heads, length, head_dim = x.shape
    merged = np.swapaxes(x, -3, -2)  # (..., N, h, head_dim)
    return merged.reshape(*batch_shape, length, num_heads * head_dim)  # (..., N, d_model)
