"""Multi-head attention with explicit weight matrices, modelled on nanoGPT's CausalSelfAttention.

Row-vector convention (q = x @ w_q + b_q); head i uses feature columns i*head_dim:(i+1)*head_dim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._arrays import as_float_arrays, check_count, float_dtype
from .attention import _SHIFT_FREE_MIN_ENTRIES, _attend, _check_mask, _softmax_rows_in_place
from .heads import check_head_split, merge_heads


# Self-attention with fewer scores than this (over all heads and items) takes _forward_small, which
# skips the general path's layers and bound check; its softmax is then a single row block.
_SMALL_MAX_SCORES = _SHIFT_FREE_MIN_ENTRIES


@dataclass(frozen=True)
class MultiHeadTrace:
    """Every intermediate of one MultiHeadAttention pass, for the teaching visuals.

    Shapes are for batched input; unbatched input drops the leading B. N is the number of
    queries (rows of x), M the number of keys (rows of kv), h = num_heads.
    """

    q: np.ndarray  # (B, N, d_model)   x @ w_q + b_q
    k: np.ndarray  # (B, M, d_model)   kv @ w_k + b_k
    v: np.ndarray  # (B, M, d_model)   kv @ w_v + b_v
    q_heads: np.ndarray  # (B, h, N, head_dim)   head i = q[..., i*head_dim:(i+1)*head_dim]
    k_heads: np.ndarray  # (B, h, M, head_dim)
    v_heads: np.ndarray  # (B, h, M, head_dim)
    scores: np.ndarray  # (B, h, N, M)   q_heads @ k_headsᵀ / sqrt(head_dim), before the mask
    weights: np.ndarray  # (B, h, N, M)   softmax of the masked scores; rows sum to 1 (or are 0)
    head_outputs: np.ndarray  # (B, h, N, head_dim)   weights @ v_heads
    concatenated: np.ndarray  # (B, N, d_model)   merge_heads(head_outputs)
    output: np.ndarray  # (B, N, d_model)   concatenated @ w_o + b_o


class MultiHeadAttention:
    """MultiHead(x, kv) = Concat(head_1, ..., head_h) w_o + b_o, Vaswani et al. (2017) §3.2.2.

    head_i = Attention(Q_i, K_i, V_i), where Q_i is columns i*head_dim:(i+1)*head_dim of
    x @ w_q + b_q (likewise K_i, V_i from kv). All weights are (d_model, d_model), all
    biases (d_model,), and are stored as read-only copies so the fused matrices built here
    cannot drift from them.
    """

    def __init__(
        self,
        *,
        w_q,
        w_k,
        w_v,
        w_o,
        b_q=None,
        b_k=None,
        b_v=None,
        b_o=None,
        num_heads: int,
    ) -> None:
        weight_names = ("w_q", "w_k", "w_v", "w_o")
        given_biases = {
            name: bias
            for name, bias in (("b_q", b_q), ("b_k", b_k), ("b_v", b_v), ("b_o", b_o))
            if bias is not None
        }
        arrays = as_float_arrays(
            w_q, w_k, w_v, w_o, *given_biases.values(),
            names=weight_names + tuple(given_biases),
        )
        weights = dict(zip(weight_names, arrays[:4]))
        biases = dict(zip(given_biases, arrays[4:]))

        w_q = weights["w_q"]
        if w_q.ndim != 2 or w_q.shape[0] != w_q.shape[1] or w_q.shape[0] == 0:
            raise ValueError(
                f"w_q must be a square (d_model, d_model) matrix with d_model >= 1, "
                f"got shape {w_q.shape}"
            )
        d_model = w_q.shape[0]
        for name, weight in weights.items():
            if weight.shape != (d_model, d_model):
                raise ValueError(
                    f"{name} must have shape (d_model, d_model) = ({d_model}, {d_model}) "
                    f"like w_q, got shape {weight.shape}"
                )
        for name, bias in biases.items():
            if bias.shape != (d_model,):
                raise ValueError(
                    f"{name} must have shape (d_model,) = ({d_model},), got shape {bias.shape}"
                )
        self._head_dim = check_head_split(d_model, num_heads)
        self._num_heads = int(num_heads)
        self._d_model = d_model

        dtype = arrays[0].dtype
        self.w_q = _frozen(weights["w_q"])
        self.w_k = _frozen(weights["w_k"])
        self.w_v = _frozen(weights["w_v"])
        self.w_o = _frozen(weights["w_o"])
        # A bias that is not given is zero (no shift), as with torch's MHA at initialisation.
        zeros = np.zeros(d_model, dtype=dtype)
        self.b_q = _frozen(biases.get("b_q", zeros))
        self.b_k = _frozen(biases.get("b_k", zeros))
        self.b_v = _frozen(biases.get("b_v", zeros))
        self.b_o = _frozen(biases.get("b_o", zeros))

        # Fused projections: one GEMM against [w_q | w_k | w_v] for self-attention and
        # [w_k | w_v] for cross-attention, instead of three or two smaller ones.
        self._w_qkv = _frozen(np.concatenate([self.w_q, self.w_k, self.w_v], axis=1))  # (d, 3d)
        self._b_qkv = _frozen(np.concatenate([self.b_q, self.b_k, self.b_v]))  # (3d,)
        self._w_kv = _frozen(np.concatenate([self.w_k, self.w_v], axis=1))  # (d, 2d)
        self._b_kv = _frozen(np.concatenate([self.b_k, self.b_v]))  # (2d,)
        # Adding a zero bias changes no number, so the passes are skipped (as after init).
        self._has_input_bias = bool(np.any(self._b_qkv))
        self._has_output_bias = bool(np.any(self.b_o))

    @classmethod
    def init(cls, d_model: int, num_heads: int, seed=0, dtype=np.float64) -> "MultiHeadAttention":
        """Seeded random weights initialised like torch.nn.MultiheadAttention; biases are zero.

        w_q | w_k | w_v are drawn as one (d_model, 3*d_model) Xavier/Glorot-uniform matrix,
        bound sqrt(6 / (fan_in + fan_out)) = sqrt(6 / (4*d_model)), as torch does for its
        stacked in_proj_weight. w_o is uniform with bound 1/sqrt(d_model), torch's nn.Linear
        default. The draw is in float64 and then cast, so float32 and float64 models with the
        same seed hold the same weights up to rounding.
        """
        d_model = check_count(d_model, "d_model", 1)
        check_head_split(d_model, num_heads)
        dtype = np.dtype(dtype)
        if dtype.kind != "f":
            raise ValueError(f"dtype must be a floating type such as np.float32, got {dtype}")
        rng = np.random.default_rng(seed)
        in_bound = math.sqrt(6.0 / (d_model + 3 * d_model))
        w_qkv = rng.uniform(-in_bound, in_bound, size=(d_model, 3 * d_model)).astype(dtype)
        out_bound = 1.0 / math.sqrt(d_model)
        w_o = rng.uniform(-out_bound, out_bound, size=(d_model, d_model)).astype(dtype)
        w_q, w_k, w_v = np.split(w_qkv, 3, axis=1)  # each (d_model, d_model)
        return cls(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, num_heads=num_heads)

    @property
    def d_model(self) -> int:
        return self._d_model

    @property
    def num_heads(self) -> int:
        return self._num_heads

    @property
    def head_dim(self) -> int:
        """d_k = d_model // num_heads, the width of each head's queries, keys and values."""
        return self._head_dim

    @property
    def dtype(self) -> np.dtype:
        return self.w_q.dtype

    def __repr__(self) -> str:
        return (
            f"MultiHeadAttention(d_model={self.d_model}, num_heads={self.num_heads}, "
            f"head_dim={self.head_dim}, dtype={self.dtype})"
        )

    def __call__(self, x, kv=None, mask=None):
        """Attend from x to kv (x itself when kv is None). Returns (output, weights).

        x: (N, d_model) or (B, N, d_model); kv: (M, d_model) or (B, M, d_model), same
        batching as x. mask: boolean, True = may attend, broadcastable to the weights'
        shape (h, N, M) or (B, h, N, M): an (N, M) mask applies to every item and head, a
        per-item mask is (B, 1, N, M). output: like x; weights: (h, N, M) or (B, h, N, M).
        """
        x, kv = self._check_inputs(x, kv)
        if kv is None and self._is_small(x):
            return self._forward_small(x, mask)
        _, _, _, _, weights, _, _, output = self._forward(x, kv, mask, keep_scores=False)
        return output, weights

    def forward_detailed(self, x, kv=None, mask=None) -> MultiHeadTrace:
        """Same computation as calling the module, returning every intermediate.

        The numbers are the very ones __call__ produces (same code path), not a re-derivation.
        """
        x, kv = self._check_inputs(x, kv)
        q_heads, k_heads, v_heads, head_outputs, weights, scores, concatenated, output = (
            self._forward(x, kv, mask, keep_scores=True)
        )
        return MultiHeadTrace(
            q=merge_heads(q_heads),
            k=merge_heads(k_heads),
            v=merge_heads(v_heads),
            q_heads=q_heads,
            k_heads=k_heads,
            v_heads=v_heads,
            scores=scores,
            weights=weights,
            head_outputs=head_outputs,
            concatenated=concatenated,
            output=output,
        )

    def project(self, x, kv=None):
        """(q, k, v) = (x w_q + b_q, kv w_k + b_k, kv w_v + b_v), d_model wide, before the split."""
        x, kv = self._check_inputs(x, kv)
        q_heads, k_heads, v_heads = self._project_heads(x, kv)
        return merge_heads(q_heads), merge_heads(k_heads), merge_heads(v_heads)

    def _forward(self, x: np.ndarray, kv: np.ndarray | None, mask, keep_scores: bool):
        """The general path, on inputs that passed _check_inputs."""
        q_heads, k_heads, v_heads = self._project_heads(x, kv)
        weights_shape = (*q_heads.shape[:-1], k_heads.shape[-2])  # (..., h, N, M)
        mask = self._check_mask(mask, weights_shape)
        head_outputs, weights, scores = _attend(
            q_heads, k_heads, v_heads, mask, keep_scores=keep_scores
        )  # (..., h, N, head_dim), (..., h, N, M)
        concatenated = merge_heads(head_outputs)  # (..., N, d_model)
        output = concatenated @ self.w_o  # (..., N, d_model)
        if self._has_output_bias:
            output += self.b_o
        return q_heads, k_heads, v_heads, head_outputs, weights, scores, concatenated, output

    def _is_small(self, x: np.ndarray) -> bool:
        batch = x.shape[0] if x.ndim == 3 else 1
        return batch * self.num_heads * x.shape[-2] ** 2 < _SMALL_MAX_SCORES

    def _forward_small(self, x: np.ndarray, mask):
        """(output, weights) of _forward for a small self-attention, in fewer calls.

        At this size per-call overhead, not arithmetic, is the cost (N=16, d_model=128, 4
        heads: a few dozen NumPy and Python calls of a few µs each, some 0.1 ms in all), so
        this path skips the layers and the intermediates a trace needs. The operations and
        their order are the general path's, so the numbers are bit-identical
        (tests/test_engine.py checks).
        """
        *batch_shape, length, _ = x.shape
        h, head_dim = self.num_heads, self.head_dim
        qkv = x @ self._w_qkv  # (..., N, 3*d_model)
        if self._has_input_bias:
            qkv += self._b_qkv
        stacked = qkv.reshape(*batch_shape, length, 3, h, head_dim)  # (..., N, 3, h, head_dim)
        if batch_shape:
            stacked = stacked.transpose(2, 0, 3, 1, 4)  # (3, B, h, N, head_dim)
        else:
            stacked = stacked.transpose(1, 2, 0, 3)  # (3, h, N, head_dim)
        q_heads, k_heads, v_heads = stacked.copy()  # contiguous, each (..., h, N, head_dim)
        weights_shape = (*batch_shape, h, length, length)
        mask = self._check_mask(mask, weights_shape)
        scores = (q_heads * (1.0 / math.sqrt(head_dim))) @ k_heads.swapaxes(-1, -2)  # (..., h, N, N)
        if mask is not None:
            np.copyto(scores, -np.inf, where=np.logical_not(mask))
        weights = _softmax_rows_in_place(scores)  # (..., h, N, N)
        head_outputs = weights @ v_heads  # (..., h, N, head_dim)
        concatenated = head_outputs.swapaxes(-3, -2).reshape(*batch_shape, length, h * head_dim)
        output = concatenated @ self.w_o  # (..., N, d_model)
        if self._has_output_bias:
            output += self.b_o
        return output, weights

    def _project_heads(self, x: np.ndarray, kv: np.ndarray | None):
        """Per-head q, k, v, each (..., h, L, head_dim) and C-contiguous so the matmuls use BLAS."""
        if kv is None:
            qkv = x @ self._w_qkv  # (..., N, 3*d_model)
            if self._has_input_bias:
                qkv += self._b_qkv
            return self._split_fused(qkv, parts=3)
        q = x @ self.w_q  # (..., N, d_model)
        kv_projected = kv @ self._w_kv  # (..., M, 2*d_model)
        if self._has_input_bias:
            q += self.b_q
            kv_projected += self._b_kv
        (q_heads,) = self._split_fused(q, parts=1)
        k_heads, v_heads = self._split_fused(kv_projected, parts=2)
        return q_heads, k_heads, v_heads

    def _split_fused(self, projected: np.ndarray, parts: int) -> tuple[np.ndarray, ...]:
        """(..., L, parts*d_model) -> `parts` arrays of (..., h, L, head_dim)."""
        *batch_shape, length, _ = projected.shape
        stacked = projected.reshape(
            *batch_shape, length, parts, self.num_heads, self.head_dim
        )  # (..., L, parts, h, head_dim)
        if batch_shape:
            stacked = stacked.transpose(2, 0, 3, 1, 4)  # (parts, B, h, L, head_dim)
        else:
            stacked = stacked.transpose(1, 2, 0, 3)  # (parts, h, L, head_dim)
        # Stacked matmul on a strided view falls back from BLAS to a slow loop: copy once.
        return tuple(np.ascontiguousarray(stacked))

    def _check_inputs(self, x, kv):
        """x and kv as float arrays, each (N, d_model) or (B, ·, d_model); kv None if it is x."""
        if kv is x:
            kv = None
        x = np.asarray(x)
        kv = None if kv is None else np.asarray(kv)
        # The weights take part in NumPy's promotion: float32 x with float64 weights is float64.
        if not (x.dtype == self.dtype and (kv is None or kv.dtype == self.dtype)):
            dtype = float_dtype(x, self.w_q) if kv is None else float_dtype(x, kv, self.w_q)
            x = x.astype(dtype, copy=False)
            kv = None if kv is None else kv.astype(dtype, copy=False)
        for name, array in (("x", x), ("kv", kv)):
            if array is None:
                continue
            if array.ndim not in (2, 3) or array.shape[-1] != self.d_model:
                raise ValueError(
                    f"{name} must have shape (N, d_model) or (B, N, d_model) with "
                    f"d_model={self.d_model}, got shape {array.shape}"
                )
        if kv is not None and (kv.ndim != x.ndim or kv.shape[:-2] != x.shape[:-2]):
            raise ValueError(
                f"kv must be batched like x (both (N, d_model), or both (B, ·, d_model) with "
                f"the same B), got x of shape {x.shape} and kv of shape {kv.shape}"
            )
        return x, kv

    @staticmethod
    def _check_mask(mask, weights_shape: tuple[int, ...]):
        if mask is not None and len(weights_shape) == 4 and np.ndim(mask) == 3:
            raise ValueError(
                f"a 3-d mask of shape {np.shape(mask)} is ambiguous for batched input with "
                f"weights of shape {weights_shape} (B, h, N, M): use (B, 1, N, M) for a mask "
                "per item, (1, h, N, M) for a mask per head, or (N, M) for all"
            )
        return _check_mask(mask, weights_shape)


def _frozen(array: np.ndarray) -> np.ndarray:
    """A C-contiguous read-only copy."""
    frozen = np.array(array, order="C", copy=True)
    frozen.setflags(write=False)
    return frozen
