"""Importing this package registers every visual kind with app.visuals.KINDS."""

from . import (  # noqa: F401
    attention_playground,
    autoregressive_pixels,
    complexity,
    head_split,
    model_heads,
    model_overview,
    long_range,
    multi_head,
    order_blindness,
    position_encoding,
    qkv_projections,
    soft_lookup,
)
