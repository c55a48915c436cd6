"""Draws the attention-playground visual: the multi-head heatmaps, with the causal mask when it is on.

A thin wrapper so the playground keeps its own entry point while sharing multi_head's drawing.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .multi_head import MultiHeadResult, draw_multi_head


def draw_attention_playground(result: MultiHeadResult) -> tuple[Figure, str]:
    return draw_multi_head(result)


__all__ = ["MultiHeadResult", "draw_attention_playground"]
