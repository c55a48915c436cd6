"""Scaled dot-product attention and its pieces: softmax, masks, hard attention, costs.

Every function takes arrays and returns arrays; the formulas follow Vaswani et al. (2017).
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._arrays import as_float_arrays, check_count

try:  # The optional C kernel (app/engine/_fastsoftmax.c); without it NumPy does every softmax.
    from . import _fastsoftmax
except ImportError:  # not built: no compiler at install time, or another architecture
    _fastsoftmax = None

# Whether float32 softmaxes along the last axis go to the kernel: built, and this CPU has AVX2 and
# FMA. Tests and the benchmark switch it off to compare with the NumPy path.
use_kernel = _fastsoftmax is not None and _fastsoftmax.supported()


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
    # `x < inf` is False for both NaN and +inf.
    if not np.all(x < np.inf):
        raise ValueError(
            "softmax input contains NaN or +inf; only finite numbers and -inf "
            "(a masked position) have a defined softmax"
        )
    if axis in (-1, x.ndim - 1):
        # The same computation as the attention functions', so their weights equal softmax()'s.
        return _softmax_rows_in_place(x.copy())
    return _softmax_in_place(x.copy(), axis=axis)


def _softmax_in_place(x: np.ndarray, axis: int = -1, temperature: float = 1.0) -> np.ndarray:
    """softmax(x / temperature) along ``axis``, overwriting and returning ``x``."""
    # Starting the max at the lowest finite float, not -inf: an all -inf slice (every key
    # masked) then gets -inf - lowest = -inf and exps of 0, instead of -inf - (-inf) = NaN.
    # Any slice with a finite entry has a max at least that large; an empty axis gets one.
    row_max = x.max(axis=axis, keepdims=True, initial=np.finfo(x.dtype).min)
    # Finite x - max can overflow to -inf (e.g. -1e308 - 1e308); exp(-inf) = 0 is right.
    with np.errstate(over="ignore"):
        np.subtract(x, row_max, out=x)
        if temperature != 1.0:
            # softmax(s / T) = softmax((s - max s) / T): dividing after the shift keeps the
            # largest entry at 0, so a tiny T sends the others to -inf, never the max to +inf.
            # Dividing by a float64 T keeps a tiny T from rounding to 0 in float32.
            np.divide(x, np.float64(temperature), out=x, casting="same_kind")
    np.exp(x, out=x)
    total = x.sum(axis=axis, keepdims=True)
    # A slice with a finite entry has total >= 1, since its max contributes exp(0) = 1;
    # an all -inf slice has total 0 and exps 0. Raising totals to 1 changes only the
    # latter, which then stay 0 instead of 0/0 = NaN.
    np.maximum(total, 1.0, out=total)
    x /= total
    return x


# Large score arrays are normalised in row blocks: a block of about 256 KiB stays in the
# L2 cache through the softmax's passes, and the blocks may be shared among one thread per
# core (NumPy releases the GIL inside ufuncs), in a few tasks per thread so that a core
# busy with something else does not hold up the rest. Rows are independent, so the numbers
# are identical to a single whole-array pass. Below about 4M scores the hand-off costs more
# than it saves, not least because BLAS threads keep spinning after the preceding matmul
# (re-measured with the shift-free softmax: N=256, 8 heads, is slower threaded).
_BLOCK_BYTES = 256 * 1024
_THREADED_MIN_ENTRIES = 1 << 22
_TASKS_PER_WORKER = 4
_thread_pool: ThreadPoolExecutor | None = None
_thread_pool_lock = threading.Lock()

# Scores no larger than this in absolute value can skip the max subtraction: exp(±64) is
# about 6e27 and 2e-28, so every exp is a normal float in float32 (limits about 3e38 and
# 1e-38) and a row of up to 5e10 of them sums without overflow. The max subtraction only
# guards against overflow; without it the softmax needs two passes fewer (max, subtract).
_SHIFT_FREE_BOUND = 64.0
# Below this many scores the bound costs more than the two passes it saves.
_SHIFT_FREE_MIN_ENTRIES = 1 << 14


def _kernel_applies(scores: np.ndarray, temperature: float = 1.0) -> bool:
    """Whether the C kernel computes this softmax (along the last axis, in place)."""
    return (
        use_kernel
        and temperature == 1.0
        and scores.dtype == np.float32
        and scores.flags.c_contiguous
        and scores.size > 0
    )


def _kernel_softmax_rows(rows: np.ndarray) -> np.ndarray:
    """softmax along the last axis of a C-contiguous float32 array, in place, by the C kernel.

    The kernel stops before a row holding NaN or +inf; that row gets the NumPy path's result
    (NaN weights), so both paths agree on every input.
    """
    cols = rows.shape[-1]
    flat = rows.reshape(-1, cols)  # a view: rows is contiguous
    done = 0
    while done < len(flat):
        done += _fastsoftmax.softmax_rows(flat[done:], cols)
        if done < len(flat):
            _softmax_in_place(flat[done : done + 1])
            done += 1
    return rows


def _softmax_rows_in_place(
    scores: np.ndarray, temperature: float = 1.0, shift_free: bool = False
) -> np.ndarray:
    """softmax along the last axis of a C-contiguous array, overwriting and returning it.

    shift_free: the caller guarantees |scores / temperature| <= _SHIFT_FREE_BOUND (and no
    NaN or +inf), so exp needs no max subtracted first. The weights are the same up to
    rounding (each exp is exact to an ulp either way). The C kernel, where it applies, always
    subtracts the max: its passes run on a row in the L1 cache, where the max costs little.
    """
    if _kernel_applies(scores, temperature):
        # The kernel works row by row in L1, so it needs no blocks; sharing its rows among threads
        # measured no faster at N=256 and N=1024 on the benchmark machine (docs/engine.md).
        return _kernel_softmax_rows(scores)
    normalise_block = _softmax_unshifted_in_place if shift_free else _softmax_in_place
    workers = 1 if scores.size < _THREADED_MIN_ENTRIES else _worker_count()
    if scores.size == 0 or not scores.flags.c_contiguous:
        return _softmax_in_place(scores, axis=-1, temperature=temperature)
    rows = scores.reshape(-1, scores.shape[-1])  # (rows, M), a view since scores is contiguous
    rows_per_block = max(1, _BLOCK_BYTES // (rows.shape[1] * rows.itemsize))
    if workers == 1:
        for start in range(0, len(rows), rows_per_block):
            normalise_block(rows[start : start + rows_per_block], temperature=temperature)
        return scores
    rows_per_task = -(-len(rows) // (workers * _TASKS_PER_WORKER))  # ceiling division

    def normalise(task_start: int) -> None:
        task_stop = min(task_start + rows_per_task, len(rows))
        for start in range(task_start, task_stop, rows_per_block):
            block = rows[start : min(start + rows_per_block, task_stop)]
            normalise_block(block, temperature=temperature)

    # list() waits for every task and re-raises any exception from one.
    list(_get_thread_pool().map(normalise, range(0, len(rows), rows_per_task)))
    return scores


def _softmax_unshifted_in_place(x: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """softmax(x / temperature) along the last axis without the max shift; see _SHIFT_FREE_BOUND."""
    if temperature != 1.0:
        np.divide(x, np.float64(temperature), out=x, casting="same_kind")
    np.exp(x, out=x)
    total = x.sum(axis=-1, keepdims=True)  # (rows, 1)
    # A row with an allowed key sums to at least exp(-_SHIFT_FREE_BOUND); a fully masked row
    # sums to 0, and raising that to the smallest normal float keeps its weights 0, not NaN.
    np.maximum(total, np.finfo(x.dtype).tiny, out=total)
    np.reciprocal(total, out=total)
    x *= total
    return x


def _score_bound(q: np.ndarray, k: np.ndarray, scale: float) -> float:
    """An upper bound on |q_i·k_j| * scale over all rows: max‖q_i‖ · max‖k_j‖ · scale (Cauchy–Schwarz)."""
    q_norm2 = np.einsum("...i,...i->...", q, q).max(initial=0.0)  # max ‖q_i‖²
    k_norm2 = np.einsum("...i,...i->...", k, k).max(initial=0.0)  # max ‖k_j‖²
    # In float64, with a 1% margin for the rounding of the float32 norms and scores.
    return math.sqrt(float(q_norm2) * float(k_norm2)) * scale * 1.01


def _worker_count() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, min(len(os.sched_getaffinity(0)), 8))
    return max(1, min(os.cpu_count() or 1, 8))


def _get_thread_pool() -> ThreadPoolExecutor:
    global _thread_pool
    with _thread_pool_lock:
        if _thread_pool is None:
            _thread_pool = ThreadPoolExecutor(
                max_workers=_worker_count(), thread_name_prefix="engine-softmax"
            )
        return _thread_pool


def _forget_thread_pool() -> None:
    # A forked child (e.g. a pre-forking web server) inherits the pool but not its threads,
    # so work sent to it would never run: start a fresh pool there on first use.
    global _thread_pool, _thread_pool_lock
    _thread_pool = None
    _thread_pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_thread_pool)


def scaled_dot_product_attention(q, k, v, mask=None, temperature: float = 1.0):
    """softmax(q kᵀ / (sqrt(d) * temperature)) v: Vaswani et al. (2017) eq. 1, with a temperature.

    q: (..., N, d) queries; k: (..., M, d) keys; v: (..., M, l) values. Leading dimensions
    broadcast (batch, heads); the weights take those of q and k.
    mask: optional boolean array broadcastable to (..., N, M); True means "query i may attend
    key j". Masked keys get weight exactly 0; a query with no allowed key gets zero weights
    and a zero output row (not NaN).
    temperature: > 0; below 1 sharpens the weights towards hard attention, above 1 flattens
    them towards uniform. 1 is the standard formula.

    Returns (output, weights): output (..., N, l), weights (..., N, M), in the common float
    dtype of q, k, v (float32 stays float32; integers become float64).
    """
    q, k, v = as_float_arrays(q, k, v, names=("q", "k", "v"))
    weights_shape = _check_qkv(q, k, v)
    mask = _check_mask(mask, weights_shape)
    temperature = _check_temperature(temperature)
    output, weights, _ = _attend(q, k, v, mask, temperature)
    return output, weights


def _attend(q, k, v, mask=None, temperature: float = 1.0, keep_scores: bool = False):
    """The computation of scaled_dot_product_attention on already-checked arrays.

    Returns (output, weights, scores); scores is q kᵀ / sqrt(d) before the mask and the
    temperature when keep_scores is True, otherwise None.
    """
    head_dim = q.shape[-1]
    scale = 1.0 / math.sqrt(head_dim)
    # Scaling q (N·d numbers) rather than the scores (N·M numbers) is the cheaper place
    # for 1/sqrt(d); a scale <= 1 cannot overflow.
    scores = (q * scale) @ np.swapaxes(k, -1, -2)  # (..., N, M)
    kept_scores = scores.copy() if keep_scores else None
    if mask is not None:
        np.copyto(scores, -np.inf, where=np.logical_not(mask))
    # Masked scores are -inf, whose exp is 0 with or without the shift, so the bound on the
    # unmasked ones is all that matters (NaN or inf in q or k fail the test: shifted path).
    shift_free = (
        scores.size >= _SHIFT_FREE_MIN_ENTRIES
        and not _kernel_applies(scores, temperature)
        and _score_bound(q, k, scale / temperature) <= _SHIFT_FREE_BOUND
    )
    weights = _softmax_rows_in_place(
        scores, temperature=temperature, shift_free=shift_free
    )  # (..., N, M)
    output = weights @ v  # (..., N, l)
    return output, weights, kept_scores


def hard_attention(q, k, v, mask=None):
    """Hard (argmax) attention: each query copies the value of its best-matching key.

    The dictionary-lookup limit of softmax attention as temperature -> 0. Same shapes,
    mask convention and dtype rule as scaled_dot_product_attention. Ties go to the first
    (lowest-index) best key; a query with no allowed key gets zero weights and output.

    Returns (output, weights) with one-hot weights (..., N, M).
    """
    q, k, v = as_float_arrays(q, k, v, names=("q", "k", "v"))
    weights_shape = _check_qkv(q, k, v)
    mask = _check_mask(mask, weights_shape)
    # 1/sqrt(d) is positive, so it cannot change which key scores highest: left out.
    scores = q @ np.swapaxes(k, -1, -2)  # (..., N, M)
    weights = np.zeros(weights_shape, dtype=scores.dtype)  # (..., N, M)
    if weights_shape[-1] > 0:
        if mask is not None:
            np.copyto(scores, -np.inf, where=np.logical_not(mask))
        best_key = np.argmax(scores, axis=-1)[..., np.newaxis]  # (..., N, 1); first max wins
        np.put_along_axis(weights, best_key, 1.0, axis=-1)
        if mask is not None:
            # argmax of an all -inf row is 0; such a query has no key to copy from.
            has_allowed_key = np.broadcast_to(mask, weights_shape).any(axis=-1, keepdims=True)
            weights *= has_allowed_key
    output = weights @ v  # (..., N, l)
    return output, weights


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
    multiply_adds = n * m * d + n * m * l
    if include_softmax:
        multiply_adds += n * m
    return multiply_adds


def _check_qkv(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[int, ...]:
    """Check q (..., N, d), k (..., M, d), v (..., M, l) fit together; return the weights' shape."""
    for name, array in (("q", q), ("k", k), ("v", v)):
        if array.ndim < 2:
            raise ValueError(
                f"{name} must have shape (..., length, features), got shape {array.shape}"
            )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same last dimension d, because each score is a dot "
            f"product q·k; got q of shape {q.shape} and k of shape {k.shape}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same length M, because each key has one value; "
            f"got k of shape {k.shape} and v of shape {v.shape}"
        )
    if q.shape[-1] == 0:
        raise ValueError(
            "q and k need at least one feature: the scale 1/sqrt(d) is undefined for d = 0"
        )
    try:
        # The weights have the leading dimensions of q kᵀ; v must fit them too.
        batch_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
        np.broadcast_shapes(batch_shape, v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch/head) dimensions of q {q.shape}, k {k.shape} and v {v.shape} "
            "do not broadcast together"
        ) from None
    return (*batch_shape, q.shape[-2], k.shape[-2])


def _check_mask(mask, weights_shape: tuple[int, ...]) -> np.ndarray | None:
    """A boolean mask that broadcasts to the weights' shape, or None."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    if mask.dtype != np.bool_:
        raise ValueError(
            f"mask must be boolean with True meaning 'may attend', got dtype {mask.dtype}; "
            "convert a 0/1 mask with mask.astype(bool) (an additive -inf mask is not accepted)"
        )
    try:
        broadcast = np.broadcast_shapes(mask.shape, weights_shape)
    except ValueError:
        broadcast = None
    if broadcast != tuple(weights_shape):
        raise ValueError(
            f"mask of shape {mask.shape} does not broadcast to the attention weights' "
            f"shape {tuple(weights_shape)} (queries x keys)"
        )
    return mask


def _check_temperature(temperature) -> float:
    """A finite float > 0."""
    try:
        value = float(temperature)
    except (TypeError, ValueError):
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"temperature must be a finite number > 0, got {temperature!r}: it divides the "
            "scores, so 0 is the hard-attention limit (use hard_attention) and a negative "
            "value would reverse the ranking of keys"
        )
    return value
