"""What each visual's engine step hands to its plot: plain frozen dataclasses of NumPy arrays.

Kept apart from the drawing modules so that the visual kinds can build them without importing matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class MultiHeadResult:
    tokens: tuple[str, ...]
    weights: np.ndarray  # (h, N, N) per-head attention weights
    head_titles: tuple[str, ...]  # e.g. "head 1: nouns↔nouns"
    head_roles: tuple[str | None, ...]  # "noun"/"verb" for a constructed head, None for a random one
    role_shares: tuple[float | None, ...]  # mean weight the role's queries put on the role's keys
    role_tokens: tuple[tuple[str, ...], ...]  # the sentence's tokens of each head's role
    temperature: float
    d_model: int
    mask: np.ndarray | None  # (N, N) True = may attend, or None for no mask
    unknown: tuple[str, ...]


@dataclass(frozen=True)
class OrderBlindnessResult:
    tokens: tuple[str, ...]
    permuted_tokens: tuple[str, ...]
    permutation: str  # "reverse", "rotate" or "swap-ends"
    positional: bool  # whether sinusoidal position encodings were added to the embeddings
    d_model: int
    output: np.ndarray  # (N, d_model) attention output for the sentence
    permuted_output: np.ndarray  # (N, d_model) output for the permuted sentence, in its own order
    difference: np.ndarray  # (N, d_model) permuted output put back in the original order, minus output
    max_abs_difference: float
    unknown: tuple[str, ...]


@dataclass(frozen=True)
class SoftLookupResult:
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    value_features: tuple[str, ...]  # names of the value columns
    temperature: float
    values: np.ndarray  # (Nk, l) each key's value
    soft_weights: np.ndarray  # (Nq, Nk) softmax(q·k / (sqrt(d)·T))
    hard_weights: np.ndarray  # (Nq, Nk) one-hot argmax
    soft_output: np.ndarray  # (Nq, l) soft_weights @ values
    hard_output: np.ndarray  # (Nq, l) hard_weights @ values
    unknown: tuple[str, ...]  # words given hashed features


@dataclass(frozen=True)
class QkvResult:
    tokens: tuple[str, ...]
    feature_names: tuple[str, ...]  # X's columns, W's rows
    x: np.ndarray  # (N, d_model) input embeddings
    w_q: np.ndarray  # (d_model, d_k)
    w_k: np.ndarray  # (d_model, d_k)
    w_v: np.ndarray  # (d_model, d_k)
    q: np.ndarray  # (N, d_k) = x @ w_q
    k: np.ndarray  # (N, d_k) = x @ w_k
    v: np.ndarray  # (N, d_k) = x @ w_v
    seed: int
    unknown: tuple[str, ...]


__all__ = ["MultiHeadResult", "OrderBlindnessResult", "QkvResult", "SoftLookupResult"]
