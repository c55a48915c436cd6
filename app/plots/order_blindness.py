"""Draws the order-blindness visual: attention outputs for a sentence, its permutation, and their difference.

One diverging scale for all three panels, so a difference of 0 looks exactly like 0 next to the outputs.
Wide: the three panels side by side, the colour bar on the right. Narrow (phones): stacked, the colour bar
across the bottom, every text 8 pt. The student's answer sits in the top line, over no data; the largest
|difference| is in the right panel's title.
"""

from __future__ import annotations

import math

from matplotlib.figure import Figure

from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.order_blindness import (
    NARROW_BELOW,
    NARROW_HEADER,
    NARROW_TEXT,
    NARROW_TITLE,
    header_text,
    narrow_panel_height,
)
from app.visuals.words import format_difference, symmetric_limit

from .figure import (
    COLORBAR_PAD,
    DIVERGING,
    EDGE,
    LABEL_PAD,
    TICK,
    TITLE_PAD,
    heatmap,
    line_height,
    new_figure,
    text_width,
)

WIDE_TEXT = 9  # points: tick labels, titles and axis labels of the wide layout
WIDE_HEADER = 10  # points: the wide layout's top line
BAR = 0.12  # inches: the colour bar's thickness
TICK_GAP = 0.08  # inches kept free between two column numbers
TICK_STEPS = (1, 2, 4, 8, 16, 32, 64)  # label every k-th column, the smallest k whose numbers keep apart


def colorbar_ticks(limit: float) -> tuple[list[float], list[str]]:
    """Five ticks ±a, ±a/2 and 0, with a the largest round number (1, 2, 3, 4, 5, 6 or 8 times a power of
    ten) within ±limit; labels with one number of decimals, a true minus sign, and "0" (never "−0")."""
    exponent = math.floor(math.log10(limit))
    top = max(m * 10.0 ** exponent for m in (1, 2, 3, 4, 5, 6, 8) if m * 10.0 ** exponent <= limit * (1 + 1e-12))
    ticks = [-top, -top / 2, 0.0, top / 2, top]
    decimals = next((d for d in range(16) if abs(round(top / 2, d) - top / 2) <= top * 1e-9), 15)
    style = f".{decimals}f" if decimals <= 4 else ".2g"  # a tiny range: significant figures with an exponent
    labels = ["0" if value == 0 else f"{value:{style}}".replace("-", "−") for value in ticks]
    return ticks, labels


def wrap(figure: Figure, text: str, width: float, fontsize: float) -> list[str]:
    """Greedy line breaks so that no line is wider than `width` inches as the renderer measures it."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_width(figure, [f"{lines[-1]} {word}"], fontsize) <= width:
            lines[-1] += f" {word}"
        else:
            lines.append(word)
    return lines


def label_step(figure: Figure, d_model: int, panel_width: float, fontsize: float) -> int:
    """Label every k-th column (1, 1 + k, 1 + 2k, ...) with k the smallest step whose numbers keep apart."""
    column = panel_width / d_model
    widest = text_width(figure, [str(d_model)], fontsize) + TICK_GAP
    return next((step for step in TICK_STEPS if step * column >= widest), d_model)


def panel_titles(result) -> tuple[str, str, str]:
    setting = "+ position encodings" if result.positional else "no position encodings"
    stated = f"max |difference| = {format_difference(result.max_abs_difference)}"
    third = "permuted − original (same input)" if result.same_input else "re-ordered back − original"
    third += f"\n{stated}"
    return f"original\n{setting}", f"permuted ({result.permutation})\n{setting}", third


def _axes(figure: Figure, left: float, bottom: float, width: float, height: float):
    """An axes at a position given in inches from the figure's lower-left corner."""
    figure_width, figure_height = figure.get_size_inches()
    return figure.add_axes((left / figure_width, bottom / figure_height, width / figure_width, height / figure_height))


def draw_order_blindness(result, inches: tuple[float, float]) -> Figure:
    """result: an OrderBlindnessResult (app.visuals.kinds.order_blindness)."""
    narrow = inches[0] == NARROW_WIDTH
    width, height = inches
    figure = new_figure(width, height, layout=None)
    text_size = NARROW_TEXT if narrow else WIDE_TEXT
    header_size = NARROW_TEXT if narrow else WIDE_HEADER
    limit = symmetric_limit(result.output, result.permuted_output, result.difference)
    ticks, tick_labels = colorbar_ticks(limit)
    n, d_model = result.output.shape
    token_width = text_width(figure, result.tokens, text_size)
    line = line_height(text_size)
    row_label_room = TICK + token_width  # ticks and token labels left of a panel

    header_lines = wrap(figure, header_text(result), width - 2 * EDGE, header_size)
    figure.text(EDGE / width, 1 - EDGE / height, "\n".join(header_lines), ha="left", va="top",
                fontsize=header_size)

    left = EDGE + line + LABEL_PAD + row_label_room  # the "token" label, then the tokens
    below = TICK + line + LABEL_PAD + line  # column numbers and "output feature"
    if narrow:
        panel_width = width - left - 0.15
        panel_height = narrow_panel_height(n)
        boxes, top = [], height - NARROW_HEADER
        for _ in range(3):
            bottom = top - NARROW_TITLE - panel_height
            boxes.append((left, bottom, panel_width, panel_height))
            top = bottom - NARROW_BELOW
        colorbar_box = (left, top - BAR, panel_width, BAR)
    else:
        colorbar_room = (COLORBAR_PAD + BAR + TICK + text_width(figure, tick_labels, text_size) + LABEL_PAD + line
                         + EDGE)
        gap = row_label_room + 0.15
        panel_width = (width - left - 2 * gap - colorbar_room) / 3
        top = height - EDGE - len(header_lines) * line_height(header_size) - 0.1 - 2 * line - TITLE_PAD
        bottom = EDGE + below
        boxes = [(left + i * (panel_width + gap), bottom, panel_width, top - bottom) for i in range(3)]
        colorbar_box = (left + 3 * panel_width + 2 * gap + COLORBAR_PAD, bottom, BAR, top - bottom)

    step = label_step(figure, d_model, panel_width, text_size)
    columns = list(range(0, d_model, step))
    panels = (
        (result.output, result.tokens),
        (result.permuted_output, result.permuted_tokens),
        (result.difference, result.tokens),
    )
    image = None
    for index, ((values, tokens), title, box) in enumerate(zip(panels, panel_titles(result), boxes)):
        ax = _axes(figure, *box)
        image = heatmap(ax, values, row_labels=list(tokens), row_title="token" if index == 0 or narrow else None,
                        title=title, vmin=-limit, vmax=limit, cmap=DIVERGING, annotate=False,
                        col_title="output feature", x_tick_params={"labelrotation": 0})
        ax.set_xticks(columns, labels=[str(j + 1) for j in columns])
        ax.tick_params(labelsize=text_size)
        ax.xaxis.label.set_fontsize(text_size)
        ax.yaxis.label.set_fontsize(text_size)
        ax.title.set_fontsize(text_size)

    cax = _axes(figure, *colorbar_box)
    colorbar = figure.colorbar(image, cax=cax, orientation="horizontal" if narrow else "vertical")
    colorbar.set_ticks(ticks, labels=tick_labels)
    colorbar.ax.tick_params(labelsize=text_size)
    colorbar.set_label("output value (shared scale)", fontsize=text_size)
    return figure
