"""Scaled dot-product attention and its pieces: softmax, masks, hard attention, costs.

Every function takes arrays and returns arrays; the formulas follow Vaswani et al. (2017).
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import as_float_arrays, check_count, check_mask, check_qkv, check_temperature


def softmax(x, axis: int = -1) -> np.ndarray:
    """softmax(x)_j = exp(x_j - max x) / sum_k exp(x_k - max x), along ``axis``.

    Subtracting the maximum changes nothing mathematically and keeps exp from overflowing.
    -inf entries (masked positions) get weight exactly 0; a slice that is all -inf gets
    all zeros instead of NaN. NaN or +inf input is a ValueError. Floating dtypes are kept;
    integers become float64. The input is not modified.
    """
    (x,) = as_float_arrays(x, names=("x",))
    if x.ndim == 0:
        raise ValueError("softmax needs at least a 1-d array: it normalises along an axis")
    if not np.all(x < np.inf):  # False for NaN as well as +inf
        raise ValueError(
            "softmax input contains NaN or +inf; only finite numbers and -inf "
            "(a masked position) have a defined softmax"
        )
    # x - max overflows to -inf only for a slice wider than the float range (e.g. -1e308 and
    # 1e308); exp(-inf) = 0 is then the right weight.
    with np.errstate(over="ignore"):
        return _softmax(x, axis)


def _softmax(x: np.ndarray, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """softmax(x / temperature) along ``axis``, on a checked array (a new array; x is kept)."""
    # The max starts at the lowest finite float, not -inf, so that an all -inf slice (every key
    # masked) gives -inf - lowest = -inf and exps of 0, not -inf - (-inf) = NaN.
    row_max = x.max(axis=axis, keepdims=True, initial=np.finfo(x.dtype).min)
    shifted = x - row_max
    if temperature != 1.0:
        # softmax(s / T) = softmax((s - max s) / T): dividing after the shift keeps the largest
        # entry at 0, so a tiny T sends the others to -inf (exp 0), never the max to +inf.
        # Dividing in float64 keeps a tiny T from rounding to 0 in float32; x's dtype is kept.
        with np.errstate(over="ignore"):
            np.divide(shifted, temperature, out=shifted, dtype=np.float64)
    exps = np.exp(shifted, out=shifted)
    total = exps.sum(axis=axis, keepdims=True)
    # A slice with a finite entry has total >= 1, as its max contributes exp(0) = 1. An all -inf
    # slice has total 0 and exps 0: dividing by 1 instead leaves its weights 0 rather than NaN.
    exps /= np.maximum(total, 1.0, out=total)
    return exps


def scaled_dot_product_attention(q, k, v, mask=None, temperature: float = 1.0):
    """softmax(q kᵀ / (sqrt(d) * temperature)) v: Vaswani et al. (2017) eq. 1, with a temperature.

    q: (..., N, d) queries; k: (..., M, d) keys; v: (..., M, l) values. Leading dimensions
    broadcast (batch, heads); the weights take those of q and k.
    mask: optional boolean array broadcastable to (..., N, M); True means "query i may attend
    key j". Masked keys get weight exactly 0; a query with no allowed key gets zero weights
    and a zero output row (not NaN).
    temperature: > 0; below 1 sharpens the weights towards one-hot on the best key (tied best keys
    share it), above 1 flattens them towards uniform. 1 is the standard formula.

    Returns (output, weights): output (..., N, l), weights (..., N, M), in the common float
    dtype of q, k, v (float32 stays float32; integers become float64).
    """
    q, k, v = as_float_arrays(q, k, v, names=("q", "k", "v"))
    mask = check_mask(mask, check_qkv(q, k, v))
    output, weights, _ = attend(q, k, v, mask, check_temperature(temperature))
    return output, weights


def attend(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask=None, temperature: float = 1.0):
    """Eq. 1 on checked arrays, the one path for single- and multi-head attention.

    Returns (output, weights, scores), with scores = q kᵀ / sqrt(d) before the mask and the
    temperature, as the visuals show them.
    """
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(q.shape[-1])  # (..., N, M)
    masked = scores if mask is None else np.where(mask, scores, -np.inf)  # (..., N, M)
    weights = _softmax(masked, temperature=temperature)  # (..., N, M)
    output = weights @ v  # (..., N, l)
    return output, weights, scores


def hard_attention(q, k, v, mask=None):
    """Hard (argmax) attention: each query copies the value of its best-matching key.

    The dictionary-lookup limit of softmax attention as temperature -> 0. Same shapes,
    mask convention and dtype rule as scaled_dot_product_attention. Ties (best_keys: equal but
    for rounding) go to the first (lowest-index) best key; a query with no allowed key gets zero
    weights and output.

    Returns (output, weights) with one-hot weights (..., N, M).
    """
    q, k, v = as_float_arrays(q, k, v, names=("q", "k", "v"))
    weights_shape = check_qkv(q, k, v)
    mask = check_mask(mask, weights_shape)
    # 1/sqrt(d) is positive, so it cannot change which key scores highest: left out.
    scores = q @ k.swapaxes(-1, -2)  # (..., N, M)
    weights = np.zeros(weights_shape, dtype=scores.dtype)  # (..., N, M)
    if weights_shape[-1] > 0:
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        best_key = np.argmax(best_keys(scores), axis=-1)[..., np.newaxis]  # (..., N, 1); the first best wins
        np.put_along_axis(weights, best_key, 1.0, axis=-1)
        if mask is not None:
            # argmax of an all -inf row is 0; such a query has no key to copy from.
            weights *= np.broadcast_to(mask, weights_shape).any(axis=-1, keepdims=True)
    output = weights @ v  # (..., N, l)
    return output, weights


def best_keys(scores: np.ndarray) -> np.ndarray:
    """True where a score (..., N, M) ties its row's largest: equal to it but for rounding.

    A matrix product may round one key's dot product differently from an identical key's (BLAS sums
    in blocks, and a block's last columns in another order), so scores within 64 units of rounding
    of the largest tie: identical keys always do.
    """
    top = scores.max(axis=-1, keepdims=True)  # (..., N, 1)
    return scores >= top - 64 * np.finfo(scores.dtype).eps * np.abs(top)


def causal_mask(n: int, m: int | None = None) -> np.ndarray:
    """Boolean (n, m) lower-triangular mask: query i may attend key j iff j <= i.

    True = may attend, as everywhere in the engine. m defaults to n. For m != n the
    diagonal stays at j = i (top-left aligned).
    """
    n = check_count(n, "n", 0)
    m = n if m is None else check_count(m, "m", 0)
    return np.tri(n, m, dtype=bool)


def attention_flops(n: int, m: int, d: int, l: int, *, include_softmax: bool = False) -> int:
    """Multiply-adds of softmax(Q Kᵀ) V for N = n queries, M = m keys, key width d, value width l.

    Q Kᵀ costs n·m·d multiply-adds and weights·V costs n·m·l, so the total is n·m·(d + l).
    The 1/sqrt(d) scaling and the softmax are O(n·m) and are not counted unless
    include_softmax=True, which adds n·m (one unit per score). One multiply-add is two
    floating-point operations in the hardware convention. Returns a Python int (no overflow).
    """
    n = check_count(n, "n", 0)
    m = check_count(m, "m", 0)
    d = check_count(d, "d", 0)
    l = check_count(l, "l", 0)
    return n * m * (d + l) + (n * m if include_softmax else 0)
