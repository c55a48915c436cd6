"""Multi-head attention with explicit weight matrices, modelled on nanoGPT's CausalSelfAttention.

Row-vector convention (q = x @ w_q + b_q); head i uses feature columns i*d_k:(i+1)*d_k.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import as_float_arrays, check_count, check_mask, check_temperature
from .attention import attend
from .heads import check_head_split


@dataclass(frozen=True)
class MultiHeadTrace:
    """Every intermediate of one MultiHeadAttention pass, for the teaching visuals.

    Shapes are for batched input; unbatched input drops the leading B. N is the number of
    queries (rows of x), M the number of keys (rows of kv), h = num_heads.
    """

    q: np.ndarray  # (B, N, d_model)   x @ w_q + b_q
    k: np.ndarray  # (B, M, d_model)   kv @ w_k + b_k
    v: np.ndarray  # (B, M, d_model)   kv @ w_v + b_v
    q_heads: np.ndarray  # (B, h, N, d_k)   head i = q[..., i*d_k:(i+1)*d_k]
    k_heads: np.ndarray  # (B, h, M, d_k)
    v_heads: np.ndarray  # (B, h, M, d_k)
    scores: np.ndarray  # (B, h, N, M)   q_heads @ k_headsᵀ / sqrt(d_k), before mask and temperature
    weights: np.ndarray  # (B, h, N, M)   softmax(masked scores / temperature)
    head_outputs: np.ndarray  # (B, h, N, d_k)   weights @ v_heads
    concatenated: np.ndarray  # (B, N, d_model)   the heads side by side: merge_heads(head_outputs)
    output: np.ndarray  # (B, N, d_model)   concatenated @ w_o + b_o


class MultiHeadAttention:
    """MultiHead(x, kv) = Concat(head_1, ..., head_h) w_o + b_o, Vaswani et al. (2017) §3.2.2.

    head_i = Attention(Q_i, K_i, V_i), where Q_i is columns i*d_k:(i+1)*d_k of x @ w_q + b_q
    (likewise K_i, V_i from kv). Weights are (d_model, d_model), biases (d_model,), all
    read-only. As in nanoGPT's c_attn, w_q | w_k | w_v are kept side by side in one
    (d_model, 3*d_model) matrix w_qkv (b_qkv likewise); w_q, w_k, w_v are its column blocks.
    """

    def __init__(self, *, w_q, w_k, w_v, w_o, b_q=None, b_k=None, b_v=None, b_o=None, num_heads):
        given = dict(w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o)
        given = {name: value for name, value in given.items() if value is not None}
        arrays = dict(zip(given, as_float_arrays(*given.values(), names=tuple(given))))
        shape = arrays["w_q"].shape
        if len(shape) != 2 or shape[0] != shape[1] or shape[0] == 0:
            raise ValueError(
                f"w_q must be a square (d_model, d_model) matrix with d_model >= 1, got shape {shape}"
            )
        d_model = shape[0]
        for name, array in arrays.items():
            expected = (d_model,) if name.startswith("b") else shape
            if array.shape != expected:
                wording = "(d_model,)" if name.startswith("b") else "(d_model, d_model)"
                raise ValueError(
                    f"{name} must have shape {wording} = {expected} like w_q, got shape {array.shape}"
                )
        self._d_model, self._num_heads = d_model, int(num_heads)
        self._head_dim = check_head_split(d_model, num_heads)  # d_k = d_model // num_heads

        zeros = np.zeros(d_model, dtype=arrays["w_q"].dtype)  # an omitted bias, as in torch's init
        self.w_qkv = _frozen(np.concatenate([arrays["w_q"], arrays["w_k"], arrays["w_v"]], axis=1))
        self.b_qkv = _frozen(np.concatenate([arrays.get(b, zeros) for b in ("b_q", "b_k", "b_v")]))
        self.w_q, self.w_k, self.w_v = np.split(self.w_qkv, 3, axis=1)  # views, each (d_model, d_model)
        self.b_q, self.b_k, self.b_v = np.split(self.b_qkv, 3)  # views, each (d_model,)
        self.w_o = _frozen(arrays["w_o"])
        self.b_o = _frozen(arrays.get("b_o", zeros))

    @classmethod
    def init(cls, d_model: int, num_heads: int, seed=0, dtype=np.float64) -> "MultiHeadAttention":
        """Seeded random weights initialised like torch.nn.MultiheadAttention; biases are zero.

        w_qkv is drawn Xavier/Glorot-uniform, bound sqrt(6 / (fan_in + fan_out)) =
        sqrt(6 / (4*d_model)), as torch draws its stacked in_proj_weight. w_o is uniform with
        bound 1/sqrt(d_model), torch's nn.Linear default. The draw is in float64 and then cast,
        so float32 and float64 models with one seed hold the same weights up to rounding.
        """
        d_model = check_count(d_model, "d_model", 1)
        check_head_split(d_model, num_heads)  # before drawing: a clear error for a bad split
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
        return self.w_qkv.dtype

    def __repr__(self) -> str:
        return (f"MultiHeadAttention(d_model={self.d_model}, num_heads={self.num_heads}, "
                f"head_dim={self.head_dim}, dtype={self.dtype})")

    def __call__(self, x, kv=None, mask=None, temperature: float = 1.0):
        """Attend from x to kv (x itself when kv is None). Returns (output, weights).

        x: (N, d_model) or (B, N, d_model); kv: (M, d_model) or (B, M, d_model), batched like x.
        mask: boolean, True = may attend, broadcastable to the weights' shape (h, N, M) or
        (B, h, N, M): (N, M) applies to every item and head, (B, 1, N, M) is per item.
        temperature > 0 divides every head's scores, as in scaled_dot_product_attention.
        output: like x; weights: (h, N, M) or (B, h, N, M).
        """
        trace = self.forward_detailed(x, kv, mask, temperature)
        return trace.output, trace.weights

    def forward_detailed(self, x, kv=None, mask=None, temperature: float = 1.0) -> MultiHeadTrace:
        """The forward pass with every intermediate; calling the module returns two of them."""
        q, k, v = self.project(x, kv)  # (..., N, d_model), (..., M, d_model), (..., M, d_model)
        h, d_k = self.num_heads, self.head_dim
        # Head i takes feature columns i*d_k:(i+1)*d_k: split the last axis, move heads forward.
        q_heads = q.reshape(*q.shape[:-1], h, d_k).swapaxes(-3, -2)  # (..., h, N, d_k)
        k_heads = k.reshape(*k.shape[:-1], h, d_k).swapaxes(-3, -2)  # (..., h, M, d_k)
        v_heads = v.reshape(*v.shape[:-1], h, d_k).swapaxes(-3, -2)  # (..., h, M, d_k)
        mask = self._check_mask(mask, (*q_heads.shape[:-1], k.shape[-2]))  # for (..., h, N, M)
        head_outputs, weights, scores = attend(
            q_heads, k_heads, v_heads, mask, check_temperature(temperature)
        )  # (..., h, N, d_k), (..., h, N, M), (..., h, N, M)
        concatenated = head_outputs.swapaxes(-3, -2).reshape(q.shape)  # (..., N, h*d_k = d_model)
        output = concatenated @ self.w_o + self.b_o  # (..., N, d_model)
        return MultiHeadTrace(
            q=q, k=k, v=v, q_heads=q_heads, k_heads=k_heads, v_heads=v_heads, scores=scores,
            weights=weights, head_outputs=head_outputs, concatenated=concatenated, output=output,
        )

    def project(self, x, kv=None):
        """(q, k, v) = (x w_q + b_q, kv w_k + b_k, kv w_v + b_v), d_model wide, before the split."""
        x, kv = self._check_inputs(x, kv)
        if kv is None:  # self-attention: one product with [w_q | w_k | w_v], as nanoGPT's c_attn
            qkv = x @ self.w_qkv  # (..., N, 3*d_model)
            qkv += self.b_qkv
            d = self.d_model
            return qkv[..., :d], qkv[..., d : 2 * d], qkv[..., 2 * d :]  # each (..., N, d_model)
        return x @ self.w_q + self.b_q, kv @ self.w_k + self.b_k, kv @ self.w_v + self.b_v

    def _check_inputs(self, x, kv):
        """x and kv as arrays in the dtype the pass computes in; kv None for self-attention."""
        names = ("x",) if kv is None or kv is x else ("x", "kv")
        arrays = [np.asarray(x)] if len(names) == 1 else [np.asarray(x), np.asarray(kv)]
        if arrays[0].dtype != self.dtype or arrays[-1].dtype != self.dtype:
            # The weights take part in the promotion: float32 x with float64 weights is float64.
            *arrays, _ = as_float_arrays(*arrays, self.w_o, names=(*names, "w_o"))
        for name, array in zip(names, arrays):
            if array.ndim not in (2, 3) or array.shape[-1] != self.d_model:
                raise ValueError(f"{name} must have shape (N, d_model) or (B, N, d_model) with "
                                 f"d_model={self.d_model}, got shape {array.shape}")
        if len(arrays) == 2 and arrays[1].shape[:-2] != arrays[0].shape[:-2]:
            raise ValueError(
                "kv must be batched like x (both (N, d_model), or both (B, ·, d_model) with the same B), "
                f"got x of shape {arrays[0].shape} and kv of shape {arrays[1].shape}"
            )
        return arrays[0], (arrays[1] if len(arrays) == 2 else None)

    @staticmethod
    def _check_mask(mask, weights_shape: tuple[int, ...]):
        if mask is not None and len(weights_shape) == 4 and np.ndim(mask) == 3:
            raise ValueError(
                f"a 3-d mask of shape {np.shape(mask)} is ambiguous for batched input with weights of "
                f"shape {weights_shape} (B, h, N, M): use (B, 1, N, M) for a mask per item, "
                "(1, h, N, M) for a mask per head, or (N, M) for all"
            )
        return check_mask(mask, weights_shape)


def _frozen(array: np.ndarray) -> np.ndarray:
    """A C-contiguous read-only copy."""
    frozen = np.array(array, order="C", copy=True)
    frozen.setflags(write=False)
    return frozen
