"""Shape diagram for the "head-split" visual: X (N × d_model) -> h heads of d_k -> concat -> × W_O.

Every number drawn comes from the engine result; beyond eight heads the middle ones are grouped.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, Rectangle

from .describe import (
    HEADS_AFTER_ELLIPSIS,
    HEADS_BEFORE_ELLIPSIS,
    drawn_heads,
    head_split_alt,
)
from .figure import SEQUENTIAL, new_figure
from .sizes import HEAD_SPLIT_INCHES

# Diagram coordinates: x in [0, 100], y in [0, 64]; bars span BAR_LEFT..BAR_RIGHT.
BAR_LEFT, BAR_RIGHT = 21.0, 96.5
ROW_LABEL_X = 0.8
ARROW_X = BAR_LEFT + 4.0
FONT = 8.5
BLOCK_FONT = 8.0  # the narrowest block (eight heads) must hold "d_k = 512"


def head_colours(num_heads: int) -> list[tuple[float, float, float, float]]:
    """One colour per head from viridis (colour-vision safe), spread over its light-to-dark range."""
    colormap = matplotlib.colormaps[SEQUENTIAL]
    if num_heads == 1:
        return [colormap(0.55)]
    return [colormap(value) for value in np.linspace(0.15, 0.9, num_heads)]


def _text_colour(fill) -> str:
    luminance = 0.2126 * fill[0] + 0.7152 * fill[1] + 0.0722 * fill[2]
    return "black" if luminance > 0.5 else "white"


def _striped_bar(ax, y: float, height: float, colours) -> None:
    """A bar of d_model feature columns, one stripe per head, stripe widths in proportion (all equal)."""
    width = (BAR_RIGHT - BAR_LEFT) / len(colours)
    for index, colour in enumerate(colours):
        ax.add_artist(Rectangle((BAR_LEFT + index * width, y), width, height, facecolor=colour,
                               edgecolor="white", linewidth=0.6 if len(colours) <= 16 else 0.2))
    ax.add_artist(Rectangle((BAR_LEFT, y), BAR_RIGHT - BAR_LEFT, height, fill=False, edgecolor="black",
                           linewidth=1.0))


def _arrow(ax, y_from: float, y_to: float, label: str) -> None:
    ax.add_artist(FancyArrowPatch((ARROW_X, y_from), (ARROW_X, y_to), arrowstyle="-|>", mutation_scale=10,
                                 color="0.25", linewidth=1.0))
    ax.text(ARROW_X + 1.5, (y_from + y_to) / 2, label, va="center", ha="left", fontsize=FONT, color="0.2")


def _column_ticks(ax, y: float, result, blocks) -> None:
    """Column numbers at the head boundaries under the input bar; with many heads only the two ends."""
    width = (BAR_RIGHT - BAR_LEFT) / result.num_heads
    boundaries = range(result.num_heads + 1) if None not in blocks else (0, result.num_heads)
    for boundary in boundaries:
        x = BAR_LEFT + boundary * width
        column = result.head_columns[boundary][0] if boundary < result.num_heads else result.d_model
        ax.plot([x, x], [y, y - 0.8], color="black", linewidth=0.8)
        ax.text(x, y - 1.0, str(column), ha="center", va="top", fontsize=FONT - 0.5)


def draw_head_split(result) -> tuple[Figure, str]:
    h, d_k, d_model = result.num_heads, result.head_dim, result.d_model
    width_out, height_out = result.output_projection_shape
    colours = head_colours(h)

    figure = new_figure(*HEAD_SPLIT_INCHES, layout="none")  # the diagram places every label itself, in axes coordinates
    ax = figure.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 64)
    ax.set_axis_off()
    # The limits are fixed, so shapes go in with add_artist: add_patch would update the data
    # limits for each one, which is a fifth of this figure's cost and changes nothing drawn.
    heads_word = "head" if h == 1 else "heads"

    # Row 1: the input, one row per token and d_model feature columns.
    ax.text(ROW_LABEL_X, 58, f"input X\nN × {d_model}", va="center", ha="left", fontsize=FONT + 0.5,
            fontweight="bold")
    _striped_bar(ax, 55, 6, colours)
    blocks = drawn_heads(h)
    _column_ticks(ax, 55, result, blocks)
    ax.text(BAR_RIGHT, 62, "feature columns", ha="right", va="bottom", fontsize=FONT - 0.5, color="0.3")
    columns_word = "column" if d_model == 1 else "columns"
    _arrow(ax, 50.5, 46.5,
           f"split the {d_model} {columns_word} into h = {h} {heads_word} of d_k = {d_model} / {h} = {d_k}")

    # Row 2: the heads, each attending on its own slice of columns.
    ax.text(ROW_LABEL_X, 40.5, f"{h} {heads_word}\neach N × {d_k}", va="center", ha="left",
            fontsize=FONT + 0.5, fontweight="bold")
    gap = 1.2
    block_width = (BAR_RIGHT - BAR_LEFT - gap * (len(blocks) - 1)) / len(blocks)
    for position, head in enumerate(blocks):
        left = BAR_LEFT + position * (block_width + gap)
        if head is None:
            hidden = h - HEADS_BEFORE_ELLIPSIS - HEADS_AFTER_ELLIPSIS
            ax.add_artist(Rectangle((left, 35), block_width, 11, facecolor="0.92", edgecolor="0.4",
                                   linewidth=0.8, linestyle="--"))
            last_hidden = h - HEADS_AFTER_ELLIPSIS - 1
            ax.text(left + block_width / 2, 40.5,
                    f"{hidden} more:\nheads {HEADS_BEFORE_ELLIPSIS}–{last_hidden},\nd_k = {d_k} each",
                    ha="center", va="center", fontsize=BLOCK_FONT, color="black")
            continue
        ax.add_artist(Rectangle((left, 35), block_width, 11, facecolor=colours[head], edgecolor="black",
                               linewidth=0.8))
        ax.text(left + block_width / 2, 40.5, f"head {head}\nd_k = {d_k}", ha="center",
                va="center", fontsize=BLOCK_FONT, color=_text_colour(colours[head]))
    _arrow(ax, 34.5, 27.5, "attention inside each head, then concatenate the outputs in head order")

    # Row 3: the heads' outputs side by side again.
    ax.text(ROW_LABEL_X, 22, f"concat\nN × ({h}·{d_k})\n= N × {width_out}", va="center", ha="left",
            fontsize=FONT + 0.5, fontweight="bold")
    _striped_bar(ax, 19, 6, colours)
    _arrow(ax, 18.5, 11.5, f"multiply by W_O ({width_out} × {height_out}), which mixes the heads")

    # Row 4: the output projection restores d_model features per token.
    ax.text(ROW_LABEL_X, 6, f"output\nN × {height_out}", va="center", ha="left", fontsize=FONT + 0.5,
            fontweight="bold")
    ax.add_artist(Rectangle((BAR_LEFT, 3), BAR_RIGHT - BAR_LEFT, 6, facecolor="0.8", edgecolor="black",
                           linewidth=1.0))
    ax.text((BAR_LEFT + BAR_RIGHT) / 2, 6, f"concat × W_O = N × {height_out}", ha="center", va="center",
            fontsize=FONT)

    return figure, head_split_alt(result)
