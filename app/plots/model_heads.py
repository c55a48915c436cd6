"""Draws the model-heads visual: one head as links from queries (left) to keys (right), opacity and width = weight;
or every head of a layer as 0-to-1 heatmaps, rows queries and columns keys. Fixed positions, no layout engine."""

from __future__ import annotations

import numpy as np
from matplotlib import patheffects
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure

from app.visuals.base import NARROW_WIDTH
from app.visuals.words import short
from app.visuals.kinds.model_heads import (ASKED_LEGEND, BAR_ROOM, EDGE, FONT, GRID_COLUMNS, GRID_GAP, NARROW_BARS,
                                           NARROW_BARS_GAP, PITCH, PREDICTION_LEGEND, TITLE, TITLE_PAD, answered_head,
                                           bars_height, bars_title_lines, grid_side, legend_height, legend_lines)
from app.visuals.model import CHARACTER_LETTERS, CHARACTERS, FOCUSED_BELOW, SHARE_MARK, beside, drawable, top_heads

from .figure import (ANSWER_STYLE, HALO, inch_axes, PREDICTED_STYLE, SEQUENTIAL, TICK, cells, line_height, new_figure,
                     outline, prediction_legend, text_width)

LEGEND = "P previous token, N next, C [CLS], S [SEP], b broad"
LINK_SPAN = 2.2  # inches between the query and the key columns at most
LINK_COLOUR = np.array([0.19, 0.41, 0.56])  # viridis at 0.35: a blue that reads on white at any opacity
BAR_LABELS = {"previous": "previous", "next": "next", "cls": "[CLS]", "sep": "[SEP]"}


def answer_legend(figure: Figure, result, inches: tuple[float, float], yours_drawn: bool = True) -> None:
    """The legend of the student's answer (dashed) and the answer (solid), at the bottom of the figure; an asked
    question's without the student's entry when nothing of theirs is drawn (no number, or one that is no head,
    position or share: the words say so)."""
    width, height = inches
    labels = (ASKED_LEGEND[0] if yours_drawn else None, ASKED_LEGEND[1]) if result.asks else PREDICTION_LEGEND
    prediction_legend(figure, labels, height - legend_height(width) + 0.06, FONT, 2 if legend_lines(width) == 1 else 1)


def _labels(tokens) -> list[str]:
    return [short(drawable(token)) for token in tokens]


def draw_links(result, inches: tuple[float, float]) -> Figure:
    """result: a ModelHeadsResult with one head. Token i's query on the left and its key on the right, row i from
    the top; a line from query i to key j for every pair, its opacity and width the weight a[i, j]."""
    figure = new_figure(*inches, layout=None)
    width, _ = inches
    (head,) = result.heads
    weights = result.weights[0]  # (N, N)
    n = len(result.tokens)
    labels = _labels(result.tokens)
    label_width = text_width(figure, labels, FONT)
    top = EDGE + 2 * line_height(TITLE) + TITLE_PAD
    span = min(width - 2 * (EDGE + label_width + TICK), LINK_SPAN)  # steep enough to see where a line goes
    ax = inch_axes(figure, EDGE + label_width + TICK, top, span, n * PITCH)
    ax.set_axis_off()
    ax.set(xlim=(0, 1), ylim=(n - 0.5, -0.5))
    queries, keys = np.indices(weights.shape)  # (N, N) each
    segments = np.stack([np.column_stack([np.zeros(n * n), queries.ravel()]),
                         np.column_stack([np.ones(n * n), keys.ravel()])], axis=1)  # (N², 2 points, xy)
    colours = np.column_stack([np.tile(LINK_COLOUR, (n * n, 1)), weights.ravel()])  # RGBA, alpha = weight
    ax.add_collection(LineCollection(segments, colors=colours, linewidths=0.3 + 2.7 * weights.ravel(),
                                     capstyle="round"))
    if result.shows_prediction:  # the answer's links solid, the student's dashed on top, each on a white halo
        halo = [patheffects.withStroke(linewidth=4.5, foreground="white")]
        for pairs, style in ((result.answer, ANSWER_STYLE), (result.predicted, PREDICTED_STYLE)):
            if pairs:
                ax.add_collection(LineCollection([[(0, query), (1, key)] for query, key in pairs],
                                                 colors=style["edgecolor"], linestyles=[style["linestyle"]],
                                                 linewidths=style["linewidth"], path_effects=halo, zorder=3))
    if result.shows_prediction:
        number = result.number
        answer_legend(figure, result, inches, bool(result.predicted) if result.asks == "key"
                      else number is not None and 0 <= number <= 1)
    for index, label in enumerate(labels):
        ax.text(-0.02, index, label, ha="right", va="center", fontsize=FONT, clip_on=False)
        ax.text(1.02, index, label, ha="left", va="center", fontsize=FONT, clip_on=False)
    figure.text(EDGE / width, 1 - EDGE / inches[1],
                f"layer {result.layer + 1}, head {head + 1}\nqueries (left) → keys (right); line = weight",
                ha="left", va="top", fontsize=TITLE, linespacing=1.2)
    if width != NARROW_WIDTH:  # the wide figure: the head's character beside its links (links_height makes room)
        _character_bars(inch_axes(figure, width - 3.0, top, 2.6, bars_height(n)), result, head)
    elif result.asks in (*CHARACTERS, "focused"):  # a phone, asked about the character: the bars under the links
        left = EDGE + text_width(figure, BAR_LABELS.values(), FONT) + TICK
        said = result.said if result.asks == "focused" else ""
        bars_top = top + n * PITCH + NARROW_BARS_GAP + bars_title_lines(said, True) * line_height(FONT) + TITLE_PAD
        _character_bars(inch_axes(figure, left, bars_top, width - left - EDGE - 0.1, NARROW_BARS), result, head,
                        "\n")
    return figure


def _character_bars(ax, result, head: int, title_break: str = " ") -> None:
    """The head's mean weight on the previous and next token, [CLS] and [SEP], as bars on 0..1; the one a question
    asks about outlined (the answer), and the student's share dashed across it."""
    characters, layer = result.characters, result.layer
    shares = [float(characters.share(character)[layer, head]) for character in CHARACTERS]
    positions = np.arange(len(CHARACTERS))[::-1]
    bars = ax.barh(positions, shares, color=LINK_COLOUR, height=0.6)
    ax.set_yticks(positions, labels=list(BAR_LABELS.values()), fontsize=FONT)
    ax.set_xlim(0, 1.2)
    ax.set_xticks([0, 0.5, 1], labels=["0", "0.5", "1"], fontsize=FONT)
    for y, share in zip(positions, shares):
        ax.text(share + 0.03, y, beside(share, SHARE_MARK), va="center", fontsize=FONT)
    if result.asks in CHARACTERS:
        asked = CHARACTERS.index(result.asks)
        halo = [patheffects.withStroke(linewidth=HALO + ANSWER_STYLE["linewidth"], foreground="white")]
        bars[asked].set(edgecolor=ANSWER_STYLE["edgecolor"], linewidth=ANSWER_STYLE["linewidth"], zorder=3)
        if result.number is not None and 0 <= result.number <= 1:  # a share's range; the words name any other
            y = positions[asked]
            ax.plot([result.number, result.number], [y - 0.45, y + 0.45], color=PREDICTED_STYLE["edgecolor"],
                    linestyle=PREDICTED_STYLE["linestyle"], linewidth=PREDICTED_STYLE["linewidth"], path_effects=halo,
                    zorder=4, gid="your-answer")
    ax.spines[["top", "right"]].set_visible(False)
    entropy = beside(float(characters.entropy[layer, head]), FOCUSED_BELOW)
    kind = "focused" if characters.focused(layer, head) else "broad"
    said = ""
    if result.asks == "focused" and result.said:  # the student's true/false, judged where the entropy is
        right = (result.said == "true") == characters.focused(layer, head)
        said = f"\nyour answer: {'focused' if result.said == 'true' else 'broad'} {'✓' if right else '✗'}"
    ax.set_title(f"mean weight per query;{title_break}entropy {entropy} nats: {kind}{said}", loc="left",
                 fontsize=FONT)


def draw_grid(result, inches: tuple[float, float]) -> Figure:
    """result: a ModelHeadsResult with every head of a layer: a heatmap per head, titled with its character. One
    axes in inches from the figure's top-left corner holds the 12 images (12 axes took 5 times as long, measured)."""
    figure = new_figure(*inches, layout=None)
    width, height = inches
    bottom = height - (legend_height(width) if result.shows_prediction else 0.0)  # the legend under all else
    columns = GRID_COLUMNS["narrow" if width < 5 else "wide"]
    side = grid_side(width)
    title = line_height(TITLE) + TITLE_PAD
    top = EDGE + 2 * line_height(TITLE)
    figure.text(EDGE / width, 1 - EDGE / height,
                f"layer {result.layer + 1}, all {len(result.heads)} heads\nrows: queries ↓, columns: keys →",
                ha="left", va="top", fontsize=TITLE, linespacing=1.2)
    ax = figure.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    characters = result.characters
    asked = result.asks in CHARACTERS
    if asked:
        shares = characters.share(result.asks)[result.layer]  # (H,) each head's mean weight there
        best = {head for _, head in top_heads(characters.share(result.asks), result.layer)}
        yours = answered_head(result.number, len(shares))
    for index, (head, weights) in enumerate(zip(result.heads, result.weights)):
        row, column = divmod(index, columns)
        left, upper = EDGE + 0.25 + column * (side + GRID_GAP), top + title + row * (title + side + GRID_GAP)
        image = cells(ax, weights, cmap=SEQUENTIAL, vmin=0.0, vmax=1.0, extent=(left, left + side, upper + side, upper))
        image.set_gid(f"head-{head}")
        if column == 0:
            ax.text(left - 0.05, upper + side / 2, "query", rotation=90, ha="right", va="center", fontsize=FONT)
        label = characters.label(result.layer, head)
        mark = f" ({CHARACTER_LETTERS[label]})" if label else ""
        if asked:  # the share the question compares the heads by, under its own letter (not the head's character)
            mark = f": {CHARACTER_LETTERS[result.asks]} {beside(float(shares[head]), SHARE_MARK)}"
            for outlined, style, inset in ((head in best, ANSWER_STYLE, 0.03), (head == yours, PREDICTED_STYLE, -0.04)):
                if outlined:
                    outline(ax, left, upper, side, side, style, inset, f"outline-{head}")
        ax.text(left, upper - TITLE_PAD, f"head {head + 1}{mark}", ha="left", va="bottom", fontsize=TITLE,
                gid=f"title-{head}")
    ax.set(xlim=(0, width), ylim=(height, 0))
    bar = inch_axes(figure, EDGE + 0.4, bottom - BAR_ROOM + 0.02 - line_height(FONT), min(width - 0.8, 3.0), 0.12)
    colorbar = figure.colorbar(image, cax=bar, orientation="horizontal")
    colorbar.ax.tick_params(labelsize=FONT)
    colorbar.set_label("attention weight (0 to 1)", fontsize=FONT)
    figure.text(EDGE / width, (height - bottom + EDGE) / height, LEGEND, ha="left", va="bottom", fontsize=FONT)
    if result.shows_prediction:
        answer_legend(figure, result, inches, asked and yours is not None)
    return figure
