"""Draws the qkv-projections visual: X, the three weight matrices and Q, K, V laid out as matrix products.

X sits left of each product and W above it, so rows meet rows and columns meet columns.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .describe import qkv_alt, qkv_limit
from .figure import DIVERGING, heatmap, new_figure
from .results import QkvResult
from .sizes import QKV_PROJECTIONS_INCHES


def _shape(array: np.ndarray) -> str:
    return f"{array.shape[0]}×{array.shape[1]}"


def draw_qkv_projections(result: QkvResult) -> tuple[Figure, str]:
    n, d_model = result.x.shape
    d_k = result.q.shape[1]
    limit = qkv_limit(result)
    figure = new_figure(*QKV_PROJECTIONS_INCHES, layout="grid")
    # Panel widths follow the matrix widths, kept between one and two product panels for X (room
    # for its title; most of the width for the products) and at least 4 columns for the others.
    product_width = max(d_k, 4)
    x_width = min(max(d_model, product_width), 2 * product_width)
    axes = figure.subplot_mosaic(
        [[".", "w_q", "w_k", "w_v"], ["x", "q", "k", "v"]],
        width_ratios=[x_width, product_width, product_width, product_width],
        height_ratios=[max(d_model, 3), max(n, 3)],
    )
    # Numbers in the cells only while they fit: about 0.3 inch per cell at 8 pt.
    annotate = d_model + 3 * d_k <= 18 and n <= 8
    common = dict(vmin=-limit, vmax=limit, cmap=DIVERGING, annotate=annotate, fmt="{:.1f}")
    # Column numbers every 4th once there are more than 8, so they stay apart.
    columns = [str(j + 1) if d_k <= 8 or j % 4 == 0 else "" for j in range(d_k)]
    # X's columns are the features W's rows name; beyond 8 they only fit as numbers.
    named_columns = d_model <= 8
    x_columns = list(result.feature_names) if named_columns else [
        str(j + 1) if j % 4 == 0 else "" for j in range(d_model)]
    image = heatmap(
        axes["x"], result.x, row_labels=list(result.tokens), col_labels=x_columns,
        row_title="token", col_title="feature" if named_columns else "feature (named on $W_Q$'s rows)",
        title=f"input embeddings X\n(the layer's input, {_shape(result.x)})",
        x_tick_params={"labelrotation": 90 if named_columns else 0}, **common,
    )
    axes["x"].title.set_fontsize(10)
    for name, weight, product in (("Q", result.w_q, result.q), ("K", result.w_k, result.k), ("V", result.w_v, result.v)):
        key = name.lower()
        heatmap(
            axes[f"w_{key}"], weight, row_labels=list(result.feature_names), col_labels=columns,
            col_title=None, title=f"$W_{name}$\n({_shape(weight)})",
            # W's columns are the product's columns, labelled below it; its rows (the features) are
            # labelled once, small, on W_Q's left.
            x_tick_params={"labelbottom": False},
            y_tick_params={"labelsize": 8} if name == "Q" else {"labelleft": False}, **common,
        )
        heatmap(
            axes[key], product, row_labels=list(result.tokens), col_labels=columns, col_title=f"{name} column",
            title=f"{name} = X·$W_{name}$\n({_shape(product)})",
            y_tick_params={"labelleft": False}, **common,  # the rows are X's tokens, labelled on its left
        )
        axes[key].title.set_fontsize(10)
        axes[f"w_{key}"].title.set_fontsize(10)
    axes["w_q"].set_ylabel("feature")
    colorbar = figure.colorbar(image, ax=list(axes.values()), shrink=0.8)
    colorbar.set_label(f"value (one scale for all panels, ±{limit:.2f})")
    return figure, qkv_alt(result, limit)
