"""Draws the soft-lookup visual: softmax weights beside the hard argmax lookup, and what each returns.

Top row: query × key weights (soft, hard); bottom row: the looked-up value features (soft, hard).
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .figure import heatmap, new_figure
from .results import SoftLookupResult


def format_temperature(temperature: float) -> str:
    """1 -> "1.0", 0.05 -> "0.05": as typed, with a decimal point so it reads as a temperature."""
    text = f"{temperature:g}"
    return text if any(mark in text for mark in ".e") else text + ".0"


def _quoted_list(words) -> str:
    quoted = [f"'{word}'" for word in words]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _describe_query(result: SoftLookupResult, row: int) -> str:
    query = result.query_tokens[row]
    weights = result.soft_weights[row]
    best = float(weights.max())
    tied = [key for key, weight in zip(result.key_tokens, weights) if weight >= best - 1e-12]
    hard_key = result.key_tokens[int(np.argmax(result.hard_weights[row]))]
    if len(tied) == len(result.key_tokens):
        soft_text = f"Query '{query}' spreads its weight evenly ({best:.2f} on each key)"
        hard_text = f"hard lookup picks the first key, '{hard_key}', with weight 1"
    elif len(tied) > 1:
        soft_text = f"Query '{query}' puts its largest weight, {best:.2f} each, on the tied keys {_quoted_list(tied)}"
        hard_text = f"hard lookup picks the first of them, '{hard_key}', with weight 1"
    else:
        soft_text = f"Query '{query}' puts its largest weight, {best:.2f}, on key '{tied[0]}'"
        hard_text = f"hard lookup picks '{hard_key}' with weight 1"
    feature = int(np.argmax(result.soft_output[row]))
    output_text = (
        f"soft output {result.value_features[feature]} {result.soft_output[row, feature]:.2f} "
        f"vs hard {result.hard_output[row, feature]:.2f}"
    )
    return f"{soft_text}; {hard_text}; {output_text}"


def soft_lookup_alt(result: SoftLookupResult) -> str:
    parts = [
        f"Soft lookup at temperature {format_temperature(result.temperature)} over the keys "
        f"{', '.join(result.key_tokens)}. "
        + ". ".join(_describe_query(result, row) for row in range(len(result.query_tokens)))
        + "."
    ]
    parts.append(
        "Top: attention weights, rows are queries and columns are keys, soft (softmax) on the left and "
        "hard (argmax, one-hot) on the right. Bottom: each query's output, the weighted sum of the keys' "
        f"values ({', '.join(result.value_features)})."
    )
    if result.unknown:
        parts.append(f"Words not in the toy lexicon, given pseudo-random features: {', '.join(result.unknown)}.")
    return " ".join(parts)


def draw_soft_lookup(result: SoftLookupResult) -> tuple[Figure, str]:
    figure = new_figure(7.6, 5.0, layout="grid")
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
