"""Draws the order-blindness visual: attention outputs for a sentence, its permutation, and their difference.

One diverging scale for all three panels, so a difference of 0 looks exactly like 0 next to the outputs.
"""

from __future__ import annotations

from matplotlib.figure import Figure

from .describe import format_difference, order_blindness_alt
from .figure import DIVERGING, heatmap, new_figure, symmetric_limit
from .results import OrderBlindnessResult
from .sizes import ORDER_BLINDNESS_INCHES


def draw_order_blindness(result: OrderBlindnessResult) -> tuple[Figure, str]:
    limit = symmetric_limit(result.output, result.permuted_output, result.difference)
    figure = new_figure(*ORDER_BLINDNESS_INCHES, layout="grid")
    axes = figure.subplots(1, 3)
    n, d_model = result.output.shape
    label_every = 1 if d_model <= 16 else 8 if d_model <= 32 else 16  # keep the column numbers apart
    columns = [str(j + 1) if j % label_every == 0 else "" for j in range(d_model)]
    common = dict(vmin=-limit, vmax=limit, cmap=DIVERGING, annotate=False, col_labels=columns, col_title="output feature",
                  x_tick_params={"labelrotation": 0})
    suffix = "\n+ position encoding" if result.positional else ""
    image = heatmap(axes[0], result.output, row_labels=list(result.tokens), row_title="token",
                    title=f"original{suffix}", **common)
    heatmap(axes[1], result.permuted_output, row_labels=list(result.permuted_tokens),
            title=f"permuted ({result.permutation}){suffix}", **common)
    heatmap(axes[2], result.difference, row_labels=list(result.tokens),
            title="permuted, re-ordered back\nminus original", **common)
    for ax in axes:
        ax.title.set_fontsize(10)
    axes[2].text(
        0.5, 0.5, f"max |difference|\n= {format_difference(result.max_abs_difference)}",
        transform=axes[2].transAxes, ha="center", va="center", fontsize=10,
        bbox=dict(boxstyle="round", facecolor="white", edgecolor="#555555", alpha=0.9),
    )
    colorbar = figure.colorbar(image, ax=list(axes), shrink=0.8)
    colorbar.set_label(f"output value (shared scale, ±{limit:.2f})")
    return figure, order_blindness_alt(result)
