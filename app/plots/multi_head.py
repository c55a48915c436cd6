"""Draws per-head attention weights (multi-head and attention-playground visuals), one heatmap per head.

Rows are queries and columns are keys on one 0-to-1 scale; cells a causal mask hides are hatched grey.
"""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import PathPatch
from matplotlib.path import Path
from matplotlib.transforms import Affine2D

from .describe import multi_head_alt
from .figure import cell_labels, contrasting_colours, heatmap, new_figure
from .results import MultiHeadResult
from .sizes import head_grid, multi_head_inches

MASKED_COLOUR = "#d9d9d9"


def _annotate(ax: Axes, weights: np.ndarray, mask: np.ndarray | None, image) -> None:
    """Write each allowed weight in its cell, in black or white for contrast with the colour."""
    rows, cols = np.nonzero(np.ones_like(weights, dtype=bool) if mask is None else mask)
    shown = weights[rows, cols]
    cell_labels(ax, cols, rows, [f"{weight:.2f}" for weight in shown],
                contrasting_colours(image.cmap, shown), fontsize=8)


def _hatch_masked(ax: Axes, mask: np.ndarray) -> None:
    """Cover every masked cell with grey hatching: one compound patch, as hatching each cell is slow."""
    squares = [Path.unit_rectangle().transformed(Affine2D().translate(j - 0.5, i - 0.5))
               for i, j in zip(*np.nonzero(~mask))]
    if squares:
        ax.add_patch(PathPatch(Path.make_compound_path(*squares), facecolor=MASKED_COLOUR,
                               edgecolor="#7f7f7f", hatch="///", linewidth=0))


def draw_multi_head(result: MultiHeadResult) -> tuple[Figure, str]:
    num_heads, n, _ = result.weights.shape
    rows, columns = head_grid(num_heads)
    figure = new_figure(*multi_head_inches(num_heads), layout="grid")
    axes = figure.subplots(rows, columns, squeeze=False)
    # Numbers in the cells only while a cell is at least about 0.3 inch wide.
    annotate = columns * n <= 20
    tokens = list(result.tokens)
    for head, ax in enumerate(axes.flat):
        if head >= num_heads:
            ax.set_axis_off()
            continue
        weights = result.weights[head]
        shown = weights if result.mask is None else np.ma.masked_where(~result.mask, weights)
        first_in_row = head % columns == 0  # the query tokens are labelled on the row's first heatmap only
        image = heatmap(ax, shown, row_labels=tokens, col_labels=tokens, vmin=0.0, vmax=1.0,
                        row_title="query" if first_in_row else None, col_title="key",
                        title=result.head_titles[head], annotate=False,
                        x_tick_params={"labelrotation": 90},
                        y_tick_params=None if first_in_row else {"labelleft": False})
        if columns >= 3:
            ax.title.set_fontsize(10 if columns == 3 else 9)
        if result.mask is not None:
            _hatch_masked(ax, result.mask)
        if annotate:
            _annotate(ax, weights, result.mask, image)
    colorbar = figure.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8)
    colorbar.set_label("attention weight (0 to 1)")
    return figure, multi_head_alt(result)
