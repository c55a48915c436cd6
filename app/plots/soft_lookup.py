"""Draws the soft-lookup visual: softmax weights beside the hard argmax lookup, and what each returns.

Top row: query × key weights (soft, hard); bottom row: the looked-up value features (soft, hard).
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .describe import format_temperature, soft_lookup_alt
from .figure import heatmap, new_figure
from .results import SoftLookupResult
from .sizes import SOFT_LOOKUP_INCHES


def draw_soft_lookup(result: SoftLookupResult) -> tuple[Figure, str]:
    figure = new_figure(*SOFT_LOOKUP_INCHES, layout="grid")
    axes = figure.subplot_mosaic(
        [["soft", "hard"], ["soft_output", "hard_output"]],
        height_ratios=[1, 1],
    )
    queries, keys = list(result.query_tokens), list(result.key_tokens)
    # "0.00" needs about 0.3 inch: beyond 7 keys the soft weights are left to the colours and the alt text.
    key_ticks = {"labelrotation": 90} if len(keys) > 6 else None  # many keys: upright names would collide
    image = heatmap(
        axes["soft"], result.soft_weights, row_labels=queries, col_labels=keys, vmin=0.0, vmax=1.0,
        row_title="query", col_title="key", title=f"soft: softmax weights (T = {format_temperature(result.temperature)})",
        annotate=len(keys) <= 7, x_tick_params=key_ticks,
    )
    heatmap(
        axes["hard"], result.hard_weights, row_labels=queries, col_labels=keys, vmin=0.0, vmax=1.0,
        row_title="query", col_title="key", title="hard: argmax lookup (one-hot)", fmt="{:.0f}",
        x_tick_params=key_ticks,
    )
    heatmap(
        axes["soft_output"], result.soft_output, row_labels=queries, col_labels=list(result.value_features),
        vmin=0.0, vmax=1.0, row_title="query", col_title="value feature", title="soft output = weights · values",
    )
    heatmap(
        axes["hard_output"], result.hard_output, row_labels=queries, col_labels=list(result.value_features),
        vmin=0.0, vmax=1.0, row_title="query", col_title="value feature", title="hard output = best key's value",
    )
    colorbar = figure.colorbar(image, ax=list(axes.values()), shrink=0.8)
    colorbar.set_label("weight (top), feature value (bottom): 0 to 1")
    return figure, soft_lookup_alt(result)
