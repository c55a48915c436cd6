"""Draws the qkv-projections visual: X, the three weight matrices and Q, K, V laid out as matrix products.

X sits left of each product and W above it, so rows meet rows and columns meet columns.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .figure import (
    COLORBAR_PAD,
    DIVERGING,
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


def _shape(array: np.ndarray) -> str:
    return f"{array.shape[0]}×{array.shape[1]}"


def _numbers(ax, values: np.ndarray, image, limit: float, fontsize: float = 8) -> None:
    """Each cell's number ("0.0" for a value that rounds to 0, never "−0.0"), black or white for contrast."""
    from app.visuals.kinds.qkv_projections import cell_text

    rows, cols = np.indices(values.shape)
    flat = values.ravel()
    cell_labels(ax, cols.ravel(), rows.ravel(), [cell_text(v) for v in flat],
                contrasting_colours(image.cmap, (flat + limit) / (2 * limit)), fontsize=fontsize)


def draw_qkv_projections(result, inches: tuple[float, float]) -> Figure:
    """result: a QkvResult (app.visuals.kinds.qkv_projections)."""
    n, d_model = result.x.shape
    d_k = result.q.shape[1]
    limit = result.limit
    figure = new_figure(*inches, layout=None)
    # Panel widths follow the matrix widths, kept between one and two product panels for X (room
    # for its title; most of the width for the products) and at least 4 columns for the others.
    product_width = max(d_k, 4)
    x_width = min(max(d_model, product_width), 2 * product_width)
    # X's columns are the features W's rows name; beyond 8 they only fit as numbers.
    named_columns = d_model <= 8
    # Fixed positions from the labels' sizes: X's tokens on the left; W_Q's feature names (8 pt) and axis
    # label in an empty column between X and the products; two-line titles; the colour bar on the right.
    gap, bar_width = 0.12, 0.9
    left = EDGE + line_height() + LABEL_PAD + text_width(figure, result.tokens) + TICK
    x_labels_height = text_width(figure, result.feature_names) if named_columns else line_height()  # turned
    above = TITLE_PAD + 2 * line_height()
    w_q_labels = TICK + text_width(figure, result.feature_names, 8) + LABEL_PAD + line_height()
    spacer = max(0.01, w_q_labels + 0.05 - 2 * gap)
    unit = (inches[0] - left - EDGE - bar_width - COLORBAR_PAD - 4 * gap - spacer) / (x_width + 3 * product_width)
    colorbar_room = fixed_grid(
        figure, rows=2, cols=5, left=left, right=EDGE, top=EDGE + above, col_gap=gap, row_gap=above + 0.05,
        bottom=EDGE + TICK + x_labels_height + LABEL_PAD + line_height() + 0.03,  # 0.03: the label's $W_Q$
        colorbar=bar_width)
    axes = figure.subplot_mosaic(
        [[".", ".", "w_q", "w_k", "w_v"], ["x", ".", "q", "k", "v"]],
        width_ratios=[x_width, spacer / unit, product_width, product_width, product_width],
        height_ratios=[max(d_model, 3), max(n, 3)],
    )
    # Numbers in the cells only while they fit: about 0.3 inch per cell at 8 pt.
    annotate = d_model + 3 * d_k <= 18 and n <= 8
    common = dict(vmin=-limit, vmax=limit, cmap=DIVERGING, annotate=False)
    # Column numbers every 4th once there are more than 8, so they stay apart.
    columns = [str(j + 1) if d_k <= 8 or j % 4 == 0 else "" for j in range(d_k)]
    x_columns = list(result.feature_names) if named_columns else [
        str(j + 1) if j % 4 == 0 else "" for j in range(d_model)]
    image = heatmap(
        axes["x"], result.x, row_labels=list(result.tokens), col_labels=x_columns,
        row_title="token", col_title="feature" if named_columns else "feature (named on $W_Q$'s rows)",
        title=f"input embeddings X\n(the layer's input, {_shape(result.x)})",
        x_tick_params={"labelrotation": 90 if named_columns else 0}, **common,
    )
    axes["x"].title.set_fontsize(10)
    # The tokens no taller than X's rows (12 words on a 5-inch figure would otherwise touch).
    row_points = axes["x"].get_position().height * inches[1] * 72 / n
    axes["x"].tick_params(axis="y", labelsize=min(10.0, max(6.0, row_points * 0.85)))
    if annotate:
        _numbers(axes["x"], result.x, image, limit)
    for name, weight, product in (("Q", result.w_q, result.q), ("K", result.w_k, result.k), ("V", result.w_v, result.v)):
        key = name.lower()
        w_image = heatmap(
            axes[f"w_{key}"], weight, row_labels=list(result.feature_names), col_labels=columns,
            col_title=None, title=f"$W_{name}$\n({_shape(weight)})",
            # W's columns are the product's columns, labelled below it; its rows (the features) are
            # labelled once, small, on W_Q's left.
            x_tick_params={"labelbottom": False},
            y_tick_params={"labelsize": 8} if name == "Q" else {"labelleft": False}, **common,
        )
        p_image = heatmap(
            axes[key], product, row_labels=list(result.tokens), col_labels=columns, col_title=f"{name} column",
            title=f"{name} = X·$W_{name}$\n({_shape(product)})",
            y_tick_params={"labelleft": False}, **common,  # the rows are X's tokens, labelled on its left
        )
        axes[key].title.set_fontsize(10)
        axes[f"w_{key}"].title.set_fontsize(10)
        if annotate:
            _numbers(axes[f"w_{key}"], weight, w_image, limit)
            _numbers(axes[key], product, p_image, limit)
    axes["w_q"].set_ylabel("feature")
    colorbar = figure.colorbar(image, ax=list(axes.values()), shrink=0.8, **colorbar_room)
    colorbar.set_label(f"value (one scale for all panels, ±{limit:.2f})")
    return figure


NARROW_FONT = 8.0  # ≥ 10 CSS px on a 375 px phone, where the 340 px image is shown at about its size
NARROW_TITLE = 9.0


def draw_qkv_narrow(result, plan, inches: tuple[float, float]) -> Figure:
    """The phone figure: X, then W_Q above Q, W_K above K, W_V above V, one scale bar below.

    plan: a NarrowPlan (app.visuals.kinds.qkv_projections.narrow_plan) placing each panel in inches.
    """
    width, height = inches
    limit = result.limit
    figure = new_figure(width, height, layout=None)

    def axes_at(panel):
        return figure.add_axes((panel.left / width, 1 - (panel.top + panel.height) / height,
                                panel.width / width, panel.height / height))

    d_model = result.x.shape[1]
    d_k = result.q.shape[1]
    tokens = list(result.tokens)
    small = {"labelsize": NARROW_FONT}
    common = dict(vmin=-limit, vmax=limit, cmap=DIVERGING, annotate=False)

    def finish(ax, matrix, image, title: str, numbered: bool) -> None:
        ax.set_title(title, loc="left", fontsize=NARROW_TITLE)
        ax.xaxis.label.set_fontsize(NARROW_FONT)
        ax.yaxis.label.set_fontsize(NARROW_FONT)
        if numbered:
            _numbers(ax, matrix, image, limit, NARROW_FONT)

    panel = plan.panels["x"]
    ax = axes_at(panel)
    x_columns = list(result.feature_names) if plan.named_columns else [
        str(j + 1) if j % 4 == 0 else "" for j in range(d_model)]
    image = heatmap(ax, result.x, row_labels=tokens, col_labels=x_columns, row_title="token",
                    col_title="feature" if plan.named_columns else "feature (named on each W's rows)",
                    x_tick_params={"labelrotation": 90 if plan.named_columns else 0, **small},
                    y_tick_params=small, **common)
    finish(ax, result.x, image, f"input embeddings X ({_shape(result.x)})\nthe layer's input, looked up",
           panel.numbered)
    # Column numbers every 4th once there are more than 8, so they stay apart.
    columns = [str(j + 1) if d_k <= 8 or j % 4 == 0 else "" for j in range(d_k)]
    for name, weight, product in (("Q", result.w_q, result.q), ("K", result.w_k, result.k),
                                  ("V", result.w_v, result.v)):
        key = name.lower()
        panel = plan.panels[f"w_{key}"]
        ax = axes_at(panel)
        image = heatmap(ax, weight, row_labels=list(result.feature_names), col_labels=columns,
                        row_title="feature", x_tick_params={"labelbottom": False, **small},
                        y_tick_params=small, **common)
        finish(ax, weight, image, f"$W_{name}$ ({_shape(weight)}), learned", panel.numbered)
        panel = plan.panels[key]
        ax = axes_at(panel)
        image = heatmap(ax, product, row_labels=tokens, col_labels=columns, row_title="token",
                        col_title=f"{name} column", x_tick_params={"labelrotation": 0, **small},
                        y_tick_params=small, **common)
        finish(ax, product, image, f"{name} = X·$W_{name}$ ({_shape(product)})", panel.numbered)
    bar = axes_at(plan.colorbar)
    colorbar = figure.colorbar(image, cax=bar, orientation="horizontal")
    colorbar.ax.tick_params(labelsize=NARROW_FONT)
    colorbar.set_label(f"value (one scale for all panels, ±{limit:.2f})", fontsize=NARROW_FONT)
    return figure
