"""Draws the multi-head visual and the attention playground's heatmap per head: rows are queries, columns keys,
weights on one 0-to-1 scale. Axes sit at positions computed from the figure's size and the labels' measured widths
(a layout engine would measure every label again in each draw)."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import PathPatch
from matplotlib.path import Path
from matplotlib.transforms import Affine2D

from app.visuals.base import estimated_width
from app.visuals.kinds.attention_playground import BAR
from app.visuals.words import short
from app.visuals.base import wrap_lines
from app.visuals.kinds.multi_head import MARK_FONT, MARK_MARGIN, MARK_PAD, MARK_ROOM, ROWS

from .figure import (COLORBAR_PAD, inch_axes, EDGE, LABEL_PAD, TICK, TITLE_PAD, cell_labels, contrasting_colours, fixed_grid,
                     heatmap, line_height, new_figure, text_width)

CHOSEN_FILL = "#ffe08a"  # as head-split's chosen row: the answer's box, with a black outline
FONT, TITLE = 8.0, 9.0  # cell numbers 8 pt: 11 px in the narrow image, shown at about its own size on a phone


def _stack(figure: Figure, left: float, right: float, panels, reserved: float = 0.0):
    """Axes from `left` to `right` inches, stacked from the top; panels: (room above, weight, room below) in
    inches, the height the rooms and the `reserved` inches at the bottom leave shared out by weight."""
    free = figure.get_size_inches()[1] - reserved - sum(above + below for above, _, below in panels)
    unit = free / sum(weight for _, weight, _ in panels)
    axes, top = [], 0.0
    for above, weight, below in panels:
        axes.append(inch_axes(figure, left, top + above, right - left, weight * unit))
        top += above + weight * unit + below
    return axes


def _numbers(ax, image, weights: np.ndarray, texts, where: np.ndarray) -> None:
    """Write texts[i] in the cells where `where` is True, black or white for contrast with the colour."""
    rows, cols = np.nonzero(where)
    cell_labels(ax, cols, rows, [texts[i] for i in np.flatnonzero(where)],
                contrasting_colours(image.cmap, weights[rows, cols]), fontsize=FONT)


# --- The attention playground: one heatmap per head ------------------------------------------------------

def _head(ax, result, head: int, labels, numbered: bool, first_column: bool, x_ticks: dict, y_ticks: dict):
    weights = result.weights[head]  # (N, N)
    allowed = np.ones_like(weights, dtype=bool) if result.mask is None else result.mask
    image = heatmap(ax, np.ma.masked_where(~allowed, weights), row_labels=labels, col_labels=labels, vmin=0.0,
                    vmax=1.0, row_title="query" if first_column else None, col_title="key", annotate=False,
                    x_tick_params=x_ticks, y_tick_params=y_ticks if first_column else {"labelleft": False})
    if not allowed.all():  # one compound patch over the masked cells: hatching each cell is slow
        squares = [Path.unit_rectangle().transformed(Affine2D().translate(j - 0.5, i - 0.5))
                   for i, j in zip(*np.nonzero(~allowed))]
        ax.add_patch(PathPatch(Path.make_compound_path(*squares), facecolor="#d9d9d9", edgecolor="#7f7f7f",
                               hatch="///", linewidth=0))
    if numbered:
        _numbers(ax, image, weights, [f"{weight:.2f}" for weight in weights.ravel()], allowed)
    return image


def draw_heads(result, inches: tuple[float, float], plan) -> Figure:
    """result: a MultiHeadResult or RealHeadResult (app.visuals.kinds.attention_playground). plan None: the wide grid
    of heads; a ColumnPlan: the phone's column of heads, each with its own labels, one scale bar below."""
    figure = new_figure(*inches, layout=None)
    labels = [short(label) for label in result.labels]
    num_heads, n, _ = result.weights.shape
    if plan is not None:
        small = {"labelsize": FONT}
        for head in range(num_heads):
            ax = inch_axes(figure, plan.left, EDGE + line_height(TITLE) + TITLE_PAD + head * plan.pitch, plan.side,
                      plan.side)
            image = _head(ax, result, head, labels, plan.numbered, True,
                          {"labelrotation": 90 if plan.upright else 0, **small}, small)
            # From the figure's left edge, not the heatmap's, which long words push right: room for the real
            # model's titles ("layer 1 head 3: 1.00 on the previous token").
            ax.set_title(result.head_titles[head], loc="left", fontsize=TITLE, x=(EDGE - plan.left) / plan.side)
            ax.xaxis.label.set_fontsize(FONT)
            ax.yaxis.label.set_fontsize(FONT)
        room = inches[0] - plan.left - EDGE
        bar = inch_axes(figure, plan.left + 0.15, EDGE + num_heads * plan.pitch, min(room, 2.6) - 0.3, BAR)
        colorbar = figure.colorbar(image, cax=bar, orientation="horizontal")
        colorbar.ax.tick_params(labelsize=FONT)
        colorbar.set_label("attention weight (0 to 1)", fontsize=FONT)
        return figure
    rows, columns = (1, num_heads) if num_heads <= 3 else (2, (num_heads + 1) // 2)
    title_size = 12 if columns <= 2 else 10 if columns == 3 else 9
    # Token labels no taller than a cell (so neighbours never overlap), from 10 pt down to 6 pt; a cell
    # is about a heatmap's share of the figure, less its labels, over the n tokens.
    cell = min((inches[0] - 2.4) / columns, (inches[1] - 1.6 * rows) / rows) / n  # inches
    label_size = max(6.0, min(10.0, cell * 72 * 0.85))
    token_width = text_width(figure, labels, label_size)
    left = EDGE + line_height() + LABEL_PAD + token_width + TICK
    below, above = TICK + token_width + LABEL_PAD + line_height(), TITLE_PAD + line_height(title_size)
    # Gaps wide enough for neighbouring titles that are wider than their heatmaps.
    titles = [text_width(figure, [title], title_size) for title in result.head_titles]
    widest_pair = max([(titles[head] + titles[head + 1]) / 2 for head in range(num_heads - 1)
                       if head % columns != columns - 1], default=0.0)
    bar_width = 0.7  # the bar, its tick labels ("0.0" to "1.0") and its label
    heatmaps_width = inches[0] - left - EDGE - bar_width - COLORBAR_PAD
    colorbar_room = fixed_grid(
        figure, rows=rows, cols=columns, left=left, right=EDGE, bottom=EDGE + below, top=EDGE + above,
        col_gap=max(0.15, columns * (widest_pair + 0.06) - heatmaps_width), row_gap=below + above + 0.1,
        colorbar=bar_width)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for head, ax in enumerate(axes):
        if head >= num_heads:
            ax.set_axis_off()
            continue
        # Numbers in the cells only while a cell is at least about 0.3 inch wide.
        image = _head(ax, result, head, labels, columns * n <= 20, head % columns == 0,
                      {"labelrotation": 90, "labelsize": label_size}, {"labelsize": label_size})
        ax.set_title(result.head_titles[head], fontsize=title_size)
    figure.colorbar(image, ax=list(axes), shrink=0.8, **colorbar_room).set_label("attention weight (0 to 1)")
    return figure


# --- The multi-head kind: one verb's rows in one head and in two heads, and what their outputs carry ---

def _rows(ax, weights: np.ndarray, row_labels, keys, upright: bool, title: str, tight: bool) -> None:
    """Weights (rows, N) as a 0-to-1 heatmap with its numbers; keys None: no key labels (an upper panel).
    tight: a cell too narrow for four characters shows ".98" (and "1.0" for a weight that rounds to 1)."""
    image = heatmap(ax, weights, row_labels=row_labels, col_labels=keys or [""] * weights.shape[1], vmin=0.0,
                    vmax=1.0, annotate=False, x_tick_params={"labelrotation": 90 if upright else 0, "labelsize": FONT},
                    y_tick_params={"labelsize": FONT})
    if not keys:
        ax.set_xticks([])
    ax.set_title(title, loc="left", fontsize=TITLE)
    texts = [f"{w:.2f}" for w in weights.ravel()]
    if tight:
        texts = ["1.0" if text == "1.00" else text[1:] for text in texts]
    _numbers(ax, image, weights, texts, np.ones(weights.shape, dtype=bool))


def _shares(ax, result, labels) -> None:
    """Rows: the one head's output, then head 1's and head 2's columns of the concatenation;
    columns: the share of the subjects' and of the objects' values each carries (no such word: '—')."""
    shares = result.shares  # (3, 2)
    present = np.array([bool(result.subjects), bool(result.objects)])
    ax.set_facecolor("#f0f0f0")
    image = heatmap(ax, np.ma.masked_where(np.broadcast_to(~present, shares.shape), shares),
                    row_labels=ROWS, col_labels=labels, vmin=0.0, vmax=1.0,
                    annotate=False, x_tick_params={"labelrotation": 0, "labelsize": FONT},
                    y_tick_params={"labelsize": FONT})
    ax.set_title("share of each value", loc="left", fontsize=TITLE)
    where = np.broadcast_to(present, shares.shape)
    _numbers(ax, image, shares, [f"{value:.2f}" for value in shares.ravel()], where)
    for row, col in zip(*np.nonzero(~where)):  # a Text: as an outline snapped to the pixels, a lone "—" can vanish
        ax.text(col, row, "—", ha="center", va="center", fontsize=FONT)


def _swap(ax, result) -> None:
    """Bars: how far the verb's output moves when the subject and the object trade places."""
    swap = result.swap
    if swap is None:
        ax.set_axis_off()
        reason = ("no verb, so no swap test" if result.verb is None
                  else "no swap test: it needs\none subject and one object,\ntwo different words")
        ax.text(0.0, 0.5, reason, transform=ax.transAxes, fontsize=FONT, va="center", ha="left")
        return
    changes = [swap.one_change, swap.heads_change]
    ax.barh([1, 0], changes, color=["#7f7f7f", "#21918c"], height=0.6)
    ax.set_yticks([1, 0], labels=["one head", f"{result.num_heads} heads"], fontsize=FONT)
    top = max(max(changes), 0.1)
    ax.set(xlim=(0, top * 1.45), ylim=(-0.6, 1.6))
    for y, change in zip((1, 0), changes):
        ax.text(change + top * 0.03, y, f"{change:.2f}", va="center", ha="left", fontsize=FONT)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.set_xlabel("how far the output moves", fontsize=FONT)
    subject, obj = (short(result.tokens[group[0]]) for group in (result.subjects, result.objects))
    ax.set_title(f"swap {subject} ↔ {obj}", loc="left", fontsize=TITLE)
    ax.spines[["top", "right"]].set_visible(False)


def _mark(figure: Figure, lines, framed) -> None:
    """The student's answer in a box along the figure's bottom, and a thick frame round the panel it stands for."""
    for spine in framed.spines.values():
        spine.set_linewidth(2.5)
        spine.set_edgecolor("black")
    width, height = figure.get_size_inches()
    # A box the figure's width, not the text's, so that it reads as a footer rather than a label.
    box = inch_axes(figure, MARK_MARGIN, height - MARK_MARGIN - 2 * MARK_PAD - len(lines) * line_height(MARK_FONT),
                    width - 2 * MARK_MARGIN, 2 * MARK_PAD + len(lines) * line_height(MARK_FONT))
    box.set(xticks=[], yticks=[], facecolor=CHOSEN_FILL)
    box.text(MARK_PAD / (width - 2 * MARK_MARGIN), 0.5, "\n".join(lines), transform=box.transAxes, ha="left",
             va="center", fontsize=MARK_FONT, linespacing=1.2)


def draw_relations(result, inches: tuple[float, float], mark_lines=(), choice: str = "") -> Figure:
    """result: a RelationResult (app.visuals.kinds.multi_head). Wide: the rows left, the outputs right;
    narrow (phone): everything stacked in one column. mark_lines: the student's answer (`choice`, "true" or "false"),
    drawn in a box at the bottom; the panel the answer stands for is framed (True: the heads, False: the one head)."""
    figure = new_figure(*inches, layout=None)
    reserved = len(mark_lines) * line_height(MARK_FONT) + MARK_ROOM if mark_lines else 0.0
    width, narrow = inches[0], inches[0] < 5
    n, line = len(result.tokens), line_height(FONT)
    labels_width = estimated_width(ROWS, FONT)  # the rows' labels
    left = EDGE + labels_width + TICK
    right_panels = 1.75  # the wide figure's shares and swap panels
    rows_right = width - EDGE if narrow else width - EDGE - right_panels - labels_width - TICK - 0.2
    cell = (rows_right - left) / n
    # The keys' labels: each word with its role, level (the role on a second line) where they fit their cells.
    words = [short(token) for token in result.tokens]
    marks = ["(subj.)" if i in result.subjects else "(obj.)" if i in result.objects
             else "(query)" if i == result.query else "" for i in range(n)]
    upright = estimated_width(words + marks, FONT) >= 0.92 * cell
    keys = [word + (" " if upright else "\n") + mark if mark else word for word, mark in zip(words, marks)]
    key_title = ["key"]
    if result.unknown:
        names = ", ".join(short(word) for word in result.unknown)
        key_title += wrap_lines(f"not in the lexicon, no part of speech: {names}", rows_right - left, FONT)
    shares_width = (width - EDGE - left if narrow else right_panels) / 2  # a column of the shares panel
    share_labels = ["\n".join([role, *wrap_lines(", ".join(short(result.tokens[i]) for i in group), shares_width, FONT)])
                    if group else f"no {role}"
                    for role, group in zip(("subject", "object"), (result.subjects, result.objects))]
    # Each panel: (room above, share of the height, room below), in inches; the rooms hold titles and labels.
    title, under_swap = TITLE_PAD + line_height(TITLE), TICK + 2 * line + LABEL_PAD + EDGE
    under_keys = TICK + (estimated_width(keys, FONT) if upright else 2 * line) + LABEL_PAD + len(key_title) * line
    under_shares = TICK + max(label.count("\n") + 1 for label in share_labels) * line + 0.15
    rows = [(EDGE + title + narrow * line_height(TITLE), 1, 0.08),  # the title takes two lines on a phone
            (title, 2, under_keys + (0.1 if narrow else EDGE))]
    outputs = [(title + (0 if narrow else EDGE), 2.2 if narrow else 3, under_shares),
               (title, 1.5 if narrow else 2, under_swap)]
    if narrow:
        one_ax, heads_ax, shares_ax, swap_ax = _stack(figure, left, rows_right, rows + outputs, reserved)
    else:
        one_ax, heads_ax = _stack(figure, left, rows_right, rows, reserved)
        shares_ax, swap_ax = _stack(figure, width - EDGE - right_panels, width - EDGE, outputs, reserved)
    tight = cell < 0.28  # "0.98" at 8 pt is 0.25 inch wide
    query, joint = short(result.tokens[result.query]), "\n" if narrow else " "
    _rows(one_ax, result.weights[:1], ROWS[:1], None, upright,
          f"query '{query}':{joint}one head, width {result.d_model}", tight)
    idle = ("" if result.num_heads == 2 else " (head 3 idle)" if result.num_heads == 3
            else f" (heads 3–{result.num_heads} idle)")
    _rows(heads_ax, result.weights[1:], ROWS[1:], keys, upright,
          f"{result.num_heads} heads, width {result.head_dim} each{idle}", tight)
    heads_ax.set_xlabel("\n".join(key_title), fontsize=FONT)
    _shares(shares_ax, result, share_labels)
    _swap(swap_ax, result)
    if mark_lines:
        _mark(figure, mark_lines, heads_ax if choice == "true" else one_ax)
    return figure
