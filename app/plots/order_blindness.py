"""Draws the order-blindness visual: attention outputs for a sentence, its permutation, and their difference,
on one diverging scale, so a difference of 0 looks exactly like 0 next to the outputs. Wide: side by side, the
colour bar on the right. Narrow (phones): stacked, the colour bar below, all text 8 pt."""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.order_blindness import (HEADERS, NARROW_BELOW, NARROW_HEADER, NARROW_TEXT, NARROW_TITLE,
                                              narrow_panel_height)
from app.visuals.words import format_difference, short, symmetric_limit

from .figure import (COLORBAR_PAD, DIVERGING, EDGE, LABEL_PAD, TICK, TITLE_PAD, cells, line_height, new_figure,
                     text_width)

WIDE_TEXT, WIDE_HEADER = 9, 10  # points: the wide layout's labels and titles, and its top line
BAR = 0.12  # inches: the colour bar's thickness
TICK_GAP = 0.08  # inches kept free between two column numbers


def colorbar_ticks(limit: float) -> tuple[list[float], list[str]]:
    """Five ticks ±a, ±a/2 and 0, with a the largest round number (1, 2, 3, 4, 5, 6 or 8 times a power of
    ten) within ±limit; labels with one number of decimals, a true minus sign, and "0" (never "−0")."""
    exponent = math.floor(math.log10(limit))
    top = max(m * 10.0 ** exponent for m in (1, 2, 3, 4, 5, 6, 8) if m * 10.0 ** exponent <= limit * (1 + 1e-12))
    ticks = [-top, -top / 2, 0.0, top / 2, top]
    decimals = next((d for d in range(16) if abs(round(top / 2, d) - top / 2) <= top * 1e-9), 15)
    style = f".{decimals}f" if decimals <= 4 else ".2g"  # a tiny range: significant figures with an exponent
    return ticks, ["0" if value == 0 else f"{value:{style}}".replace("-", "−") for value in ticks]


def draw_order_blindness(result, inches: tuple[float, float]) -> Figure:
    """result: an OrderBlindnessResult (app.visuals.kinds.order_blindness)."""
    width, height = inches
    narrow = width == NARROW_WIDTH
    figure = new_figure(width, height, layout=None)  # fixed positions, computed here from the figure's size
    text_size, header_size = (NARROW_TEXT, NARROW_TEXT) if narrow else (WIDE_TEXT, WIDE_HEADER)
    run = result.run
    limit = symmetric_limit(run.output, run.permuted_output, run.difference)
    ticks, tick_labels = colorbar_ticks(limit)
    n, d_model = run.output.shape
    line = line_height(text_size)
    tokens, permuted = [short(t) for t in result.tokens], [short(t) for t in result.permuted_tokens]  # labels
    row_label_room = TICK + text_width(figure, tokens, text_size)  # ticks and token labels left of a panel

    header = HEADERS[result.choice] if narrow else HEADERS[result.choice].replace("\n", " ")  # over no data
    figure.text(EDGE / width, 1 - EDGE / height, header, ha="left", va="top", fontsize=header_size)

    left = EDGE + line + LABEL_PAD + row_label_room  # the "token" label, then the tokens
    if narrow:
        panel_width, panel_height = width - left - 0.15, narrow_panel_height(n)
        tops = [height - NARROW_HEADER - i * (NARROW_TITLE + panel_height + NARROW_BELOW) for i in range(4)]
        boxes = [(left, top - NARROW_TITLE - panel_height, panel_width, panel_height) for top in tops[:3]]
        colorbar_box = (left, tops[3] - BAR, panel_width, BAR)
    else:
        colorbar_room = COLORBAR_PAD + BAR + TICK + text_width(figure, tick_labels, text_size) + LABEL_PAD + line + EDGE
        gap = row_label_room + 0.15
        panel_width = (width - left - 2 * gap - colorbar_room) / 3
        top = height - EDGE - line_height(header_size) - 0.1 - 2 * line - TITLE_PAD
        bottom = EDGE + TICK + line + LABEL_PAD + line  # column numbers and "output feature"
        boxes = [(left + i * (panel_width + gap), bottom, panel_width, top - bottom) for i in range(3)]
        colorbar_box = (left + 3 * panel_width + 2 * gap + COLORBAR_PAD, bottom, BAR, top - bottom)

    # Number every k-th column (1, 1 + k, 1 + 2k, ...), k the smallest power of two whose numbers keep apart.
    widest = text_width(figure, [str(d_model)], text_size) + TICK_GAP
    step = next((k for k in (1, 2, 4, 8, 16, 32, 64) if k * panel_width / d_model >= widest), d_model)
    columns = range(0, d_model, step)
    setting = "+ position encodings" if result.positional else "no position encodings"
    third = "permuted − original (same input)" if result.same_input else "re-ordered back − original"
    panels = (
        (run.output, tokens, f"original\n{setting}"),
        (run.permuted_output, permuted, f"permuted ({result.permutation})\n{setting}"),
        (run.difference, tokens, f"{third}\nmax |difference| = {format_difference(run.max_abs_difference)}"),
    )
    for index, ((values, labels, title), (x, y, w, h)) in enumerate(zip(panels, boxes)):
        # Not figure.heatmap: it would make a tick for every one of the d_model columns, the render's
        # costliest part; here each tick is made once, already styled.
        ax = figure.add_axes((x / width, y / height, w / width, h / height))
        image = cells(ax, values, cmap=DIVERGING, vmin=-limit, vmax=limit)
        ax.tick_params(labelsize=text_size)
        ax.set_xticks(columns, labels=[str(j + 1) for j in columns])
        ax.set_yticks(range(n), labels=labels)  # rows are tokens
        # The axis labels are placed where the layout above made room for them, so that matplotlib need not
        # measure every tick label to place them (about a tenth of the render).
        ax.set_xlabel("output feature", fontsize=text_size)
        ax.xaxis.set_label_coords(0.5, -(TICK + line + LABEL_PAD) / h)
        if index == 0 or narrow:
            ax.set_ylabel("token", fontsize=text_size)
            ax.yaxis.set_label_coords(-(row_label_room + LABEL_PAD) / w, 0.5)
        # y given: matplotlib then skips measuring the tick labels to place the title (none sit on top).
        ax.set_title(title, fontsize=text_size, y=1.0)

    x, y, w, h = colorbar_box
    colorbar = figure.colorbar(image, cax=figure.add_axes((x / width, y / height, w / width, h / height)),
                               orientation="horizontal" if narrow else "vertical")
    colorbar.ax.tick_params(labelsize=text_size)
    colorbar.set_ticks(ticks, labels=tick_labels)
    colorbar.set_label("output value (shared scale)", fontsize=text_size)
    if narrow:
        colorbar.ax.xaxis.set_label_coords(0.5, -(TICK + line + LABEL_PAD) / h)
    else:
        colorbar.ax.yaxis.set_label_coords(1 + (TICK + text_width(figure, tick_labels, text_size) + LABEL_PAD) / w, 0.5)
    return figure
