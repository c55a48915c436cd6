"""The pure-NumPy attention engine: every number the app shows is computed here.

Arrays in, arrays out; no Flask, no matplotlib. Conventions are in docs/engine.md.
"""

from .attention import (
    attention_flops, causal_mask, hard_attention, scaled_dot_product_attention, softmax,
)
from .heads import merge_heads, split_heads
from .multihead import MultiHeadAttention, MultiHeadTrace
from .positional import sinusoidal_positional_encoding

__all__ = [
    "MultiHeadAttention", "MultiHeadTrace", "attention_flops", "causal_mask", "hard_attention",
    "merge_heads", "scaled_dot_product_attention", "sinusoidal_positional_encoding", "softmax",
    "split_heads",
]
