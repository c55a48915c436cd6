"""Draws the model-overview visual: a small 0-to-1 attention map per head (rows queries, columns keys), layers
down and heads across (a phone: heads down, layers across), each titled with its computed character."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from app.visuals.kinds.model_overview import COLOUR_BAR, GAP, LEFT, cell_side, grid_shape, mark
from matplotlib.patches import Rectangle

from app.visuals.kinds.model_heads import EDGE, FONT, TITLE, answered_head, legend_height
from app.visuals.model import CHARACTER_LETTERS, NUM_HEADS, SHARE_MARK, beside, top_heads

from .figure import ANSWER_STYLE, PREDICTED_STYLE, SEQUENTIAL, cell_labels, inch_axes, line_height, new_figure, outline
from .model_heads import answer_legend

HIGHLIGHT = "#fdf0b4"  # a pale yellow behind the maps of the layer a question is about

LEGEND = "P previous token, N next, C [CLS], S [SEP] (mean weight); b broad; each map: rows queries, columns keys"


def map_layout(attentions: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray, np.ma.MaskedArray]:
    """The 72 maps as one mesh: the cell edges across and down, in inches from the figure's top-left corner, and the
    weights, each map's (N, N) block at its place in the grid; the strips between the maps are masked (not drawn)."""
    rows, columns = grid_shape(width)
    narrow = rows > columns
    n = attentions.shape[-1]
    side, title, top = cell_side(width), line_height(FONT) + 2 / 72, EDGE + 2 * line_height(TITLE)
    steps = side / n * np.arange(n + 1)  # (N + 1,) one map's cell edges
    xs = np.concatenate([LEFT + column * (side + GAP) + steps for column in range(columns)])  # (columns (N + 1),)
    ys = np.concatenate([top + title + row * (title + side + GAP) + steps for row in range(rows)])  # (rows (N + 1),)
    weights = np.ma.masked_array(np.zeros((len(ys) - 1, len(xs) - 1)), mask=True)  # a cell between two edges
    for row in range(rows):
        for column in range(columns):
            layer, head = (column, row) if narrow else (row, column)
            weights[row * (n + 1): row * (n + 1) + n, column * (n + 1): column * (n + 1) + n] = attentions[layer, head]
    return xs, ys, weights


def draw_overview(result, inches: tuple[float, float]) -> Figure:
    """One axes over the whole figure in inches from its top-left corner, holding the 72 maps as one mesh: 72 axes
    of their own took 4 s to build and draw, 72 images in one axes a tenth of that, and one mesh with masked gaps
    0.34× the images' time (measured, interleaved, PNG included)."""
    figure = new_figure(*inches, layout=None)
    width, height = inches
    bottom = height - (legend_height(width) if result.shows_prediction else 0.0)  # the legend under all else
    rows, columns = grid_shape(width)
    narrow = rows > columns
    side = cell_side(width)
    title = line_height(FONT) + 2 / 72
    top = EDGE + 2 * line_height(TITLE)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    mesh = ax.pcolormesh(*map_layout(result.attentions, width), cmap=SEQUENTIAL, vmin=0.0, vmax=1.0, shading="flat",
                         antialiased=False, edgecolors="none")
    mesh.set_gid("maps")
    figure.text(EDGE / width, 1 - EDGE / height,
                "every head of all-MiniLM-L6-v2\n" + ("heads down, layers across" if narrow
                                                     else "layers down, heads across"),
                ha="left", va="top", fontsize=TITLE, linespacing=1.2)
    marks = []  # (x, y, text) centred above each map
    if result.layer is not None:  # the question's layer: a band behind its maps and their titles
        along = LEFT + result.layer * (side + GAP) if narrow else top + result.layer * (title + side + GAP)
        across = (rows if narrow else columns) * (side + GAP) - GAP
        band = (along - GAP, top - GAP, side + 2 * GAP, rows * (title + side + GAP)) if narrow else \
            (LEFT - 0.55, along - GAP / 2, 0.55 + across + GAP, title + side + GAP)
        ax.add_patch(Rectangle(band[:2], *band[2:], facecolor=HIGHLIGHT, edgecolor="none", zorder=0, gid="layer"))
    if result.asks:
        best = {head for _, head in top_heads(result.characters.share(result.asks), result.layer)}
        yours = answered_head(result.number, NUM_HEADS)
    for row in range(rows):
        for column in range(columns):
            layer, head = (column, row) if narrow else (row, column)
            left = LEFT + column * (side + GAP)
            upper = top + title + row * (title + side + GAP)
            if result.asks and layer == result.layer:
                # The answer's outline inside the map, the student's on its edge: both show when they are one head.
                for outlined, style, inset in ((head in best, ANSWER_STYLE, 0.05), (head == yours, PREDICTED_STYLE, 0)):
                    if outlined:
                        outline(ax, left, upper, side, side, style, inset, f"outline-{head}")
            if result.asks and layer == result.layer:  # the share the question compares the heads by, under its letter
                asked = float(result.characters.share(result.asks)[layer, head])
                text = f"{CHARACTER_LETTERS[result.asks]} {beside(asked, SHARE_MARK)}"
            else:
                text = mark(result.characters, layer, head, not narrow)
            marks.append((left + side / 2, upper - line_height(FONT) / 2, text))
            if column == 0:
                ax.text(left - 0.05, upper + side / 2, f"head {head + 1}" if narrow else f"layer {layer + 1}",
                        fontsize=FONT, ha="right", va="center")
            if row == rows - 1:
                ax.text(left + side / 2, upper + side + 0.03, f"L{layer + 1}" if narrow else f"{head + 1}",
                        fontsize=FONT, ha="center", va="top")
    ax.set(xlim=(0, width), ylim=(height, 0))
    # As one collection of glyph outlines: 72 Text artists took half of the drawing time (measured).
    shown = [(x, y, text) for x, y, text in marks if text]
    cell_labels(ax, [x for x, _, _ in shown], [y for _, y, _ in shown], [text for _, _, text in shown],
                ["black"] * len(shown), fontsize=FONT)
    # The maps' one colour scale, 0 to 1, under the grid.
    below, bar_height, _ = COLOUR_BAR
    bar = inch_axes(figure, LEFT, top + rows * (title + side + GAP) - GAP + below, min(1.6, width - LEFT - 1.4),
                    bar_height)
    figure.colorbar(mesh, cax=bar, orientation="horizontal", ticks=[0, 0.5, 1])
    bar.tick_params(labelsize=FONT, length=2, pad=1)
    bar.set_xticklabels(["0", "0.5", "1"])
    bar.text(1.04, 0.5, "attention weight", transform=bar.transAxes, ha="left", va="center", fontsize=FONT)
    under = "layer" if narrow else "head"
    lowest = (height - bottom + EDGE) / height  # above the prediction legend, if any
    figure.text(EDGE / width, lowest + line_height(FONT) / height, f"columns: {under} number",
                ha="left", va="bottom", fontsize=FONT)
    figure.text(EDGE / width, lowest, LEGEND if not narrow else "P previous, N next, C [CLS], S [SEP], b broad",
                ha="left", va="bottom", fontsize=FONT)
    if result.shows_prediction:
        answer_legend(figure, result, inches, answered_head(result.number, NUM_HEADS) is not None)
    return figure
