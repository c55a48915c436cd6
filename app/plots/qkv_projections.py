"""Draws the qkv-projections visual: X, the three weight matrices and Q, K, V laid out as matrix products.

Wide: X sits left of each product and W above it, so rows meet rows and columns meet columns. Narrow
(phone): X, then each W above its product, one column, placed by the kind's narrow_plan. On an answer page
the option panels (X, Q, K, V) carry the student's ticks: a dashed outline and a ✓/✗ mark above the title.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from app.visuals.kinds.qkv_projections import (MARK_FONT, MARK_PAD, MAX_NAMED_COLUMNS, NARROW_FONT, NARROW_TITLE,
                                               WIDE_MARK_ROOM, cell_text)
from app.visuals.words import short

from .figure import (COLORBAR_PAD, inch_axes, DIVERGING, EDGE, LABEL_PAD, PREDICTED_STYLE, TICK, TITLE_PAD,
                     cell_labels, contrasting_colours, fixed_grid, heatmap, line_height, new_figure, outline,
                     text_width)


def _shape(array: np.ndarray) -> str:
    return f"{array.shape[0]}×{array.shape[1]}"


def _column_numbers(count: int) -> list[str]:
    """1, 2, 3, ...; every 4th only once there are more than 8, so they stay apart."""
    return [str(j + 1) if count <= 8 or j % 4 == 0 else "" for j in range(count)]


def _panel(ax, matrix: np.ndarray, limit: float, title: str, title_style: dict, numbers: float | None, **labels):
    """One matrix on the shared diverging scale, titled; with its cells' numbers at `numbers` pt (black or
    white for contrast, "0.0" for a value that rounds to 0) unless that is None. Returns the mesh and the title."""
    image = heatmap(ax, matrix, vmin=-limit, vmax=limit, cmap=DIVERGING, annotate=False, **labels)
    title_text = ax.set_title(title, **title_style)
    if numbers:
        rows, cols = np.indices(matrix.shape)
        flat = matrix.ravel()
        cell_labels(ax, cols.ravel(), rows.ravel(), [cell_text(v) for v in flat],
                    contrasting_colours(image.cmap, (flat + limit) / (2 * limit)), fontsize=numbers)
    return image, title_text


def _mark_text(mark, narrow: bool) -> str:
    return f"{mark.verdict}: {mark.reason}" if narrow else f"{mark.verdict}\n{mark.reason}"


def _mark(ax, title, mark, matrix: np.ndarray, fontsize: float, narrow: bool) -> None:
    """An option panel's mark on an answer page: a dashed outline on its frame if the student ticked it, and above
    its title whether ticking it or leaving it was right (✓/✗) and what the panel shows that decides it: Q, K and V
    are computed by a learned map, X is looked up."""
    if mark.ticked:
        rows, cols = matrix.shape
        outline(ax, -0.5, -0.5, cols, rows, PREDICTED_STYLE)
    # Placed from the title's own box, so it sits above the title whatever the title's lines.
    ax.annotate(_mark_text(mark, narrow),
                xy=(0 if narrow else 0.5, 1), xycoords=title, xytext=(0, MARK_PAD * 72), textcoords="offset points",
                ha="left" if narrow else "center", va="bottom", fontsize=fontsize, annotation_clip=False)


def _marks_legend(figure: Figure, fontsize: float, columns: int):
    """What the marks mean, at the figure's top left: the dashed outline, and ✓/✗."""
    handles = [Patch(facecolor="none", label="your tick", **PREDICTED_STYLE),
               Patch(facecolor="none", edgecolor="none", label="✓ right, ✗ wrong")]
    width, height = figure.get_size_inches()
    return figure.legend(handles=handles, loc="upper left", bbox_to_anchor=(EDGE / width, 1 - EDGE / height),
                         ncols=columns, fontsize=fontsize, frameon=False, handlelength=1.6, handleheight=1.0,
                         borderaxespad=0.0, borderpad=0.0, columnspacing=0.8, handletextpad=0.5)


def draw_qkv_projections(result, inches: tuple[float, float]) -> Figure:
    """result: a QkvResult (app.visuals.kinds.qkv_projections)."""
    n, d_model = result.x.shape
    d_k = result.q.shape[1]
    limit = result.limit
    tokens = [short(token) for token in result.tokens]  # a long word cut in the labels, whole in the words
    figure = new_figure(*inches, layout=None)
    # Panel widths follow the matrix widths, kept between one and two product panels for X (room
    # for its title; most of the width for the products) and at least 4 columns for the others.
    product_width = max(d_k, 4)
    x_width = min(max(d_model, product_width), 2 * product_width)
    # Fixed positions from the labels' sizes: X's tokens on the left; W_Q's feature names (8 pt) and axis
    # label in an empty column between X and the products; two-line titles; the colour bar on the right.
    gap, bar_width = 0.12, 0.9
    mark_room = WIDE_MARK_ROOM if result.marks else 0.0  # the marks, above the titles of X, Q, K and V
    left = EDGE + line_height() + LABEL_PAD + text_width(figure, tokens) + TICK
    above = TITLE_PAD + 2 * line_height()
    w_q_labels = TICK + text_width(figure, result.feature_names, 8) + LABEL_PAD + line_height()
    spacer = max(0.01, w_q_labels + 0.05 - 2 * gap)
    unit = (inches[0] - left - EDGE - bar_width - COLORBAR_PAD - 4 * gap - spacer) / (x_width + 3 * product_width)
    # X's columns carry the feature names, turned, while a line of text fits each column (long words narrow X).
    named_columns = d_model <= MAX_NAMED_COLUMNS and unit * x_width / d_model >= line_height()
    x_labels_height = text_width(figure, result.feature_names) if named_columns else line_height()  # turned
    colorbar_room = fixed_grid(
        figure, rows=2, cols=5, left=left, right=EDGE, top=EDGE + above, col_gap=gap,
        row_gap=above + 0.05 + mark_room,
        bottom=EDGE + TICK + x_labels_height + LABEL_PAD + line_height() + 0.03,  # 0.03: the label's $W_Q$
        colorbar=bar_width)
    axes = figure.subplot_mosaic(
        [[".", ".", "w_q", "w_k", "w_v"], ["x", ".", "q", "k", "v"]],
        width_ratios=[x_width, spacer / unit, product_width, product_width, product_width],
        height_ratios=[max(d_model, 3), max(n, 3)],
    )
    # The marks centred over the product panels at 9 pt, or at 8 where long tokens leave the panels too narrow.
    product_inches = unit * product_width + gap  # a product panel and a gap: the room each mark is centred in
    mark_lines = [line for mark in result.marks.values() for line in _mark_text(mark, narrow=False).split("\n")]
    mark_font = MARK_FONT if text_width(figure, mark_lines, MARK_FONT) < product_inches - 0.05 else NARROW_FONT
    # Cell numbers while the widest fits the narrowest cell (long words narrow the panels) and rows stay tall.
    narrowest = min(unit * x_width / d_model, unit * product_width / d_k)  # inches per cell
    widest = text_width(figure, [cell_text(v) for m in result.matrices.values() for v in m.ravel()], 8)
    numbers = 8 if widest + 0.02 <= narrowest and n <= 8 else None  # 0.02 inch: two pixels either side
    titles = {"fontsize": 10}
    columns = _column_numbers(d_k)
    image, x_title = _panel(
        axes["x"], result.x, limit, f"input embeddings X\n(the layer's input, {_shape(result.x)})", titles, numbers,
        row_labels=tokens, col_labels=result.feature_names if named_columns else _column_numbers(d_model),
        row_title="token", col_title="feature" if named_columns else "feature (named on $W_Q$'s rows)",
        x_tick_params={"labelrotation": 90 if named_columns else 0})
    # The tokens no taller than X's rows (12 words on a 5-inch figure would otherwise touch).
    row_points = axes["x"].get_position().height * inches[1] * 72 / n
    axes["x"].tick_params(axis="y", labelsize=min(10.0, max(6.0, row_points * 0.85)))
    for name in "QKV":
        weight, product = result.matrices[f"w_{name.lower()}"], result.matrices[name.lower()]
        # W's columns are the product's columns, labelled below it; its rows (the features) are labelled
        # once, small, on W_Q's left; the product's rows are X's tokens, labelled on its left.
        _panel(axes[f"w_{name.lower()}"], weight, limit, f"$W_{name}$\n({_shape(weight)})", titles, numbers,
               row_labels=result.feature_names, col_labels=columns, x_tick_params={"labelbottom": False},
               y_tick_params={"labelsize": 8} if name == "Q" else {"labelleft": False})
        _, product_title = _panel(axes[name.lower()], product, limit, f"{name} = X·$W_{name}$\n({_shape(product)})",
                                  titles, numbers, row_labels=tokens, col_labels=columns,
                                  col_title=f"{name} column", y_tick_params={"labelleft": False})
        if result.marks:
            _mark(axes[name.lower()], product_title, result.marks[name.lower()], product, mark_font, narrow=False)
    if result.marks:
        _mark(axes["x"], x_title, result.marks["x"], result.x, mark_font, narrow=False)
        _marks_legend(figure, mark_font, columns=1)
    axes["w_q"].set_ylabel("feature")
    colorbar = figure.colorbar(image, ax=list(axes.values()), shrink=0.8, **colorbar_room)
    colorbar.set_label(f"value (one scale for all panels, ±{limit:.2f})")
    return figure


def draw_qkv_narrow(result, panels: dict, inches: tuple[float, float]) -> Figure:
    """The phone figure: X, then W_Q above Q, W_K above K, W_V above V, one scale bar below.

    panels: the Panels of app.visuals.kinds.qkv_projections.narrow_plan, in inches from the top left.
    """
    width, height = inches
    tokens = [short(token) for token in result.tokens]  # a long word cut in the labels, whole in the words
    figure = new_figure(width, height, layout=None)
    axes_at = lambda panel: inch_axes(figure, panel.left, panel.top, panel.width, panel.height)  # noqa: E731

    small = {"labelsize": NARROW_FONT}
    titles = {"loc": "left", "fontsize": NARROW_TITLE}
    named_columns = result.x.shape[1] <= MAX_NAMED_COLUMNS
    columns = _column_numbers(result.q.shape[1])
    for key, matrix in result.matrices.items():
        name = key[-1].upper()
        if key == "x":
            title = f"input embeddings X ({_shape(matrix)})\nthe layer's input, looked up"
            labels = dict(row_labels=tokens, row_title="token",
                          col_labels=result.feature_names if named_columns else _column_numbers(matrix.shape[1]),
                          col_title="feature" if named_columns else "feature (named on each W's rows)",
                          x_tick_params={"labelrotation": 90 if named_columns else 0, **small})
        else:  # a W, whose columns are labelled once, under its product below it; or that product
            weight = key.startswith("w_")
            title = f"$W_{name}$ ({_shape(matrix)}), learned" if weight else f"{name} = X·$W_{name}$ ({_shape(matrix)})"
            labels = dict(row_labels=result.feature_names if weight else tokens,
                          row_title="feature" if weight else "token", col_labels=columns,
                          col_title=None if weight else f"{name} column",
                          x_tick_params={"labelbottom": not weight, **small})
        ax = axes_at(panels[key])
        image, title_text = _panel(ax, matrix, result.limit, title, titles,
                                   NARROW_FONT if panels[key].numbered else None, y_tick_params=small, **labels)
        ax.xaxis.label.set_fontsize(NARROW_FONT)
        ax.yaxis.label.set_fontsize(NARROW_FONT)
        if key in result.marks:
            _mark(ax, title_text, result.marks[key], matrix, MARK_FONT, narrow=True)
    if result.marks:
        _marks_legend(figure, NARROW_FONT, columns=2)
    colorbar = figure.colorbar(image, cax=axes_at(panels["colorbar"]), orientation="horizontal")
    colorbar.ax.tick_params(labelsize=NARROW_FONT)
    colorbar.set_label(f"value (one scale for all panels, ±{result.limit:.2f})", fontsize=NARROW_FONT)
    return figure
