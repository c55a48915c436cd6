"""Draws the model-overview visual: a small 0-to-1 attention map per head (rows queries, columns keys), layers
down and heads across (a phone: heads down, layers across), each titled with its computed character."""

from __future__ import annotations

from matplotlib.figure import Figure

from app.visuals.kinds.model_overview import GAP, LEFT, cell_side, grid_shape, mark
from app.visuals.kinds.model_heads import EDGE, FONT, TITLE

from .figure import SEQUENTIAL, cell_labels, line_height, new_figure

LEGEND = "P previous token, N next, C [CLS], S [SEP] (mean weight); b broad; each map: rows queries, columns keys"


def draw_overview(result, inches: tuple[float, float]) -> Figure:
    """One axes over the whole figure in inches from its top-left corner, holding the 72 maps as images: 72 axes
    of their own took 4 s to build and draw (measured), the images in one axes a tenth of that."""
    figure = new_figure(*inches, layout=None)
    width, height = inches
    rows, columns = grid_shape(width)
    narrow = rows > columns
    side = cell_side(width)
    title = line_height(FONT) + 2 / 72
    top = EDGE + 2 * line_height(TITLE)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    figure.text(EDGE / width, 1 - EDGE / height,
                "every head of all-MiniLM-L6-v2\n" + ("heads down, layers across" if narrow
                                                     else "layers down, heads across"),
                ha="left", va="top", fontsize=TITLE, linespacing=1.2)
    marks = []  # (x, y, text) centred above each map
    for row in range(rows):
        for column in range(columns):
            layer, head = (column, row) if narrow else (row, column)
            left = LEFT + column * (side + GAP)
            upper = top + title + row * (title + side + GAP)
            image = ax.imshow(result.attentions[layer, head], cmap=SEQUENTIAL, vmin=0.0, vmax=1.0,
                              interpolation="nearest", aspect="auto", extent=(left, left + side, upper + side, upper))
            image.set_gid(f"map-{layer}-{head}")
            marks.append((left + side / 2, upper - line_height(FONT) / 2,
                          mark(result.characters, layer, head, not narrow)))
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
    under = "layer" if narrow else "head"
    figure.text(EDGE / width, EDGE / height + line_height(FONT) / height, f"columns: {under} number",
                ha="left", va="bottom", fontsize=FONT)
    figure.text(EDGE / width, EDGE / height, LEGEND if not narrow else "P previous, N next, C [CLS], S [SEP], b broad",
                ha="left", va="bottom", fontsize=FONT)
    return figure
