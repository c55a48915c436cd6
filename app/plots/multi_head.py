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

from .figure import (
    COLORBAR_PAD,
    EDGE,
    LABEL_PAD,
    TICK,
    TITLE_PAD,
    cell_labels,
    contrasting_colours,
    fixed_grid,
    heatmap,
    line_height,
    new_figure,
    text_width,
)

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


def draw_multi_head(result, grid: tuple[int, int], inches: tuple[float, float]) -> Figure:
    """result: a MultiHeadResult (app.visuals.kinds.multi_head); one heatmap per head on a (rows, columns) grid."""
    num_heads, n, _ = result.weights.shape
    rows, columns = grid
    figure = new_figure(*inches, layout=None)
    # Fixed positions from the labels' sizes: the widest token (upright on the left, turned below), and
    # gaps wide enough for neighbouring titles that are wider than their heatmaps.
    from app.visuals.kinds.multi_head import grid_label

    title_size = 12 if columns <= 2 else 10 if columns == 3 else 9
    tokens = [grid_label(token) for token in result.tokens]
    # Token labels no taller than a cell (so neighbours never overlap), from 10 pt down to 6 pt; a cell
    # is about a heatmap's share of the figure, less its labels, over the n tokens.
    cell = min((inches[0] - 2.4) / columns, (inches[1] - 1.6 * rows) / rows) / n  # inches
    label_size = max(6.0, min(10.0, cell * 72 * 0.85))
    token_width = text_width(figure, tokens, label_size)
    left = EDGE + line_height() + LABEL_PAD + token_width + TICK
    below = TICK + token_width + LABEL_PAD + line_height()
    above = TITLE_PAD + line_height(title_size)
    titles = [text_width(figure, [title], title_size) for title in result.head_titles]
    widest_pair = max([(titles[head] + titles[head + 1]) / 2 for head in range(num_heads - 1)
                       if head % columns != columns - 1], default=0.0)
    bar_width = 0.7  # the bar, its tick labels ("0.0" to "1.0") and its label
    heatmaps_width = inches[0] - left - EDGE - bar_width - COLORBAR_PAD
    colorbar_room = fixed_grid(
        figure, rows=rows, cols=columns, left=left, right=EDGE, bottom=EDGE + below, top=EDGE + above,
        col_gap=max(0.15, columns * (widest_pair + 0.06) - heatmaps_width), row_gap=below + above + 0.1,
        colorbar=bar_width)
    axes = figure.subplots(rows, columns, squeeze=False)
    # Numbers in the cells only while a cell is at least about 0.3 inch wide.
    annotate = columns * n <= 20
    label = {"labelsize": label_size}
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
                        x_tick_params={"labelrotation": 90, **label},
                        y_tick_params=label if first_in_row else {"labelleft": False})
        ax.title.set_fontsize(title_size)
        if result.mask is not None:
            _hatch_masked(ax, result.mask)
        if annotate:
            _annotate(ax, weights, result.mask, image)
    colorbar = figure.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, **colorbar_room)
    colorbar.set_label("attention weight (0 to 1)")
    return figure


GRID_NARROW_FONT = 8.0  # ≥ 10 CSS px on a 375 px phone, where the 340 px image is shown at about its size
GRID_NARROW_TITLE = 9.0


def draw_head_column(result, plan, inches: tuple[float, float]) -> Figure:
    """The phone figure of the per-head grid: one heatmap per head in one column, each with its query and
    key labels, the weights in the cells where they fit, one 0-to-1 scale bar below.

    result: a MultiHeadResult; plan: a HeadColumnPlan (app.visuals.kinds.multi_head.head_column_plan)."""
    from app.visuals.kinds.multi_head import grid_label

    width, height = inches
    figure = new_figure(width, height, layout=None)
    labels = [grid_label(token) for token in result.tokens]
    small = {"labelsize": GRID_NARROW_FONT}
    image = None
    for head, top in enumerate(plan.tops):
        ax = figure.add_axes((plan.left / width, 1 - (top + plan.side) / height, plan.side / width,
                              plan.side / height))
        weights = result.weights[head]
        shown = weights if result.mask is None else np.ma.masked_where(~result.mask, weights)
        image = heatmap(ax, shown, row_labels=labels, col_labels=labels, vmin=0.0, vmax=1.0,
                        row_title="query", col_title="key", annotate=False,
                        x_tick_params={"labelrotation": 90 if plan.upright else 0, **small}, y_tick_params=small)
        ax.set_title(result.head_titles[head], loc="left", fontsize=GRID_NARROW_TITLE)
        ax.xaxis.label.set_fontsize(GRID_NARROW_FONT)
        ax.yaxis.label.set_fontsize(GRID_NARROW_FONT)
        if result.mask is not None:
            _hatch_masked(ax, result.mask)
        if plan.numbered:
            _annotate(ax, weights, result.mask, image)
    bar = figure.add_axes((plan.bar_left / width, 1 - (plan.bar_top + 0.12) / height, plan.bar_width / width,
                           0.12 / height))
    colorbar = figure.colorbar(image, cax=bar, orientation="horizontal")
    colorbar.ax.tick_params(labelsize=GRID_NARROW_FONT)
    colorbar.set_label("attention weight (0 to 1)", fontsize=GRID_NARROW_FONT)
    return figure


# --- The multi-head kind: one verb's rows in one head and in two heads, and what their outputs carry ---

FONT = 8.0  # cell numbers: 8 pt is 11 px in the narrow image, shown at about its own size on a phone
NONE_COLOUR = "#f0f0f0"
ROLE_MARK = {"subject": " (subj.)", "object": " (obj.)", "query": " (query)"}
MAX_LABEL = 14  # longer words are cut in tick labels; the alt text has them whole


def _short(word: str) -> str:
    return word if len(word) <= MAX_LABEL else word[: MAX_LABEL - 1] + "…"


def _key_labels(result, cell_inches: float) -> tuple[list[str], bool]:
    """The keys' tick labels, each word with its role, and whether they must stand upright (rotated 90°).

    Level labels, the role on a second line, when the longest fits its cell (8 pt ≈ 0.068 inch a character).
    """
    words, roles = [], []
    for index, token in enumerate(result.tokens):
        role = ("subject" if index in result.subjects else "object" if index in result.objects
                else "query" if index == result.query else None)
        words.append(_short(token))
        roles.append(ROLE_MARK[role] if role else "")
    level = max(max(len(word), len(role.strip())) for word, role in zip(words, roles)) * 0.068 < 0.92 * cell_inches
    if level:
        return [word + ("\n" + role.strip() if role else "") for word, role in zip(words, roles)], False
    return [word + role for word, role in zip(words, roles)], True


def _weight_text(weight: float, tight: bool) -> str:
    """"0.98"; in a cell too narrow for four characters ".98" (and "1.0" for a weight that rounds to 1)."""
    text = f"{weight:.2f}"
    if not tight:
        return text
    return "1.0" if text == "1.00" else text[1:]


def _rows(ax: Axes, weights: np.ndarray, row_labels: list[str], key_labels: list[str] | None, upright: bool,
          title: str, tight: bool) -> None:
    """Weights (rows, N) as a 0-to-1 heatmap with its numbers; key labels only under the lowest panel."""
    image = heatmap(ax, weights, row_labels=row_labels, col_labels=key_labels or [""] * weights.shape[1],
                    vmin=0.0, vmax=1.0, annotate=False, col_title="key" if key_labels else None,
                    x_tick_params={"labelrotation": 90 if upright else 0, "labelsize": FONT},
                    y_tick_params={"labelsize": FONT})
    if not key_labels:
        ax.tick_params(axis="x", labelbottom=False, length=0)
    else:
        ax.xaxis.label.set_fontsize(FONT)
    ax.set_title(title, loc="left", fontsize=9)
    rows, cols = np.indices(weights.shape)
    cell_labels(ax, cols.ravel(), rows.ravel(), [_weight_text(w, tight) for w in weights.ravel()],
                contrasting_colours(image.cmap, weights.ravel()), fontsize=FONT)


def _shares(ax: Axes, result) -> None:
    """Rows: the one head's output, then head 1's and head 2's columns of the concatenation;
    columns: the share of the subjects' and of the objects' values each carries (none: '—')."""
    shares = result.shares  # (3, 2)
    present = np.array([bool(result.subjects), bool(result.objects)])
    shown = np.ma.masked_where(np.broadcast_to(~present, shares.shape), shares)
    ax.set_facecolor(NONE_COLOUR)
    words = [", ".join(_short(result.tokens[i]) for i in group) for group in (result.subjects, result.objects)]
    column_labels = [f"{role}\n{word}" if word else f"no {role}" for role, word in zip(("subject", "object"), words)]
    image = heatmap(ax, shown, row_labels=["one head", "head 1", "head 2"],
                    col_labels=column_labels, vmin=0.0, vmax=1.0, annotate=False,
                    x_tick_params={"labelrotation": 0, "labelsize": FONT}, y_tick_params={"labelsize": FONT})
    ax.set_title("share of each value", loc="left", fontsize=9)
    rows, cols = np.indices(shares.shape)
    texts = [f"{value:.2f}" if present[col] else "—" for value, col in zip(shares.ravel(), cols.ravel())]
    colours = [colour if present[col] else "black"
               for colour, col in zip(contrasting_colours(image.cmap, shares.ravel()), cols.ravel())]
    cell_labels(ax, cols.ravel(), rows.ravel(), texts, colours, fontsize=FONT)


def _swap(ax: Axes, result) -> None:
    """Bars: how far the verb's output moves when the subject and the object trade places."""
    swap = result.swap
    if swap is None:
        ax.set_axis_off()
        reason = ("no verb, so no swap test" if result.verb is None
                  else "no swap test: it needs\none subject and one object,\ntwo different words")
        ax.text(0.0, 0.5, reason, transform=ax.transAxes, fontsize=FONT, va="center", ha="left")
        return
    subject, obj = (_short(result.tokens[group[0]]) for group in (result.subjects, result.objects))
    changes = [swap.one_change, swap.heads_change]
    ax.barh([1, 0], changes, color=["#7f7f7f", "#21918c"], height=0.6)
    ax.set_yticks([1, 0], labels=["one head", f"{result.num_heads} heads"], fontsize=FONT)
    top = max(max(changes), 0.1)
    ax.set_xlim(0, top * 1.45)
    ax.set_ylim(-0.6, 1.6)
    for y, change in zip((1, 0), changes):
        ax.text(change + top * 0.03, y, f"{change:.2f}", va="center", ha="left", fontsize=FONT)
    ax.tick_params(axis="x", labelsize=FONT)
    ax.set_xlabel("how far the output moves", fontsize=FONT)
    ax.set_title(f"swap {subject} ↔ {obj}", loc="left", fontsize=9)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def draw_relations(result, inches: tuple[float, float], narrow: bool) -> Figure:
    """result: a RelationResult (app.visuals.kinds.multi_head). Wide: the rows left, the outputs right;
    narrow (phone): everything stacked."""
    figure = new_figure(*inches, layout="constrained")
    n = len(result.tokens)
    query = _short(result.tokens[result.query])
    if narrow:
        grid = figure.add_gridspec(4, 1, height_ratios=[1, 2, 2.2, 1.5])
        one_ax, heads_ax, shares_ax, swap_ax = (figure.add_subplot(grid[i, 0]) for i in range(4))
        tight = n > 8  # cells of about 0.23 inch: ".98" fits, "0.98" does not
        cell = 2.75 / n
    else:
        grid = figure.add_gridspec(2, 2, width_ratios=[1.8, 1], height_ratios=[1, 2])
        one_ax, heads_ax = figure.add_subplot(grid[0, 0]), figure.add_subplot(grid[1, 0])
        right = grid[:, 1].subgridspec(2, 1, height_ratios=[3, 2])
        shares_ax, swap_ax = figure.add_subplot(right[0]), figure.add_subplot(right[1])
        tight = False
        cell = 4.0 / n
    keys, upright = _key_labels(result, cell)
    joint = "\n" if narrow else " "
    _rows(one_ax, result.one_weights[np.newaxis], ["one head"], None, upright,
          f"query '{query}':{joint}one head, width {result.d_model}", tight)
    idle = "" if result.num_heads == 2 else f" (heads 3–{result.num_heads} idle)"
    _rows(heads_ax, result.head_weights, ["head 1", "head 2"], keys, upright,
          f"{result.num_heads} heads, width {result.head_dim} each{idle}", tight)
    if result.unknown:
        names = ", ".join(_short(word) for word in result.unknown)
        heads_ax.set_xlabel(f"key\nhashed features (not in the lexicon): {names}", fontsize=FONT, wrap=True)
    _shares(shares_ax, result)
    _swap(swap_ax, result)
    return figure
