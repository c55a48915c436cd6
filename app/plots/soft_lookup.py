"""Draws the soft-lookup visual: score → score ÷ T → softmax weights, the value table, the weighted sum,
and the hard (argmax) lookup beside it, each cell written out so the student can redo the arithmetic.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from app.visuals.base import line_height
from app.visuals.kinds.soft_lookup import EDGE, PANEL_DATA, choice_height, legend_entries, score_range, shown_cells

from .figure import SEQUENTIAL, cell_labels, contrasting_colours, heatmap, mark_cells, new_figure, prediction_legend

SCORE_MAP = "cividis"  # scores are not weights: another colour-vision-safe map, ranged by score_range


def draw_soft_lookup(result, layout) -> Figure:
    """result: a SoftLookupResult; layout: its plan_layout (app.visuals.kinds.soft_lookup)."""
    width, height = layout.size
    points = layout.points
    figure = new_figure(width, height, layout=None)  # fixed positions: cells are sized to their numbers
    cells = shown_cells(result)
    tick_style = {"labelsize": points, "length": 2, "pad": 2}
    for p in layout.placements:
        columns = slice(p.start, p.stop)
        data = np.asarray(getattr(result, PANEL_DATA[p.name][0]))
        if p.name in ("scores", "scaled"):  # one range for both panels and all their axes
            cmap, (vmin, vmax) = SCORE_MAP, score_range(result)
        else:
            cmap, vmin, vmax = SEQUENTIAL, 0.0, 1.0  # weights, values and outputs all lie in [0, 1]
        data = data[:, columns]
        left, bottom, w, h = p.rect
        ax = figure.add_axes((left / width, bottom / height, w / width, h / height))
        image = heatmap(ax, data, row_labels=p.row_labels, col_labels=p.col_labels[columns], vmin=vmin, vmax=vmax,
                        cmap=cmap, annotate=False, y_tick_params=tick_style,
                        x_tick_params={**tick_style, "labelrotation": 90 if p.rotate_columns else 0})
        ax.set_ylabel(p.row_title, fontsize=points, labelpad=2)
        ax.set_xlabel(p.col_title, fontsize=points, labelpad=2)
        ax.set_title(p.title, loc="left", fontsize=points + 0.5, pad=3)
        rows_index, cols_index = np.indices(data.shape)
        cell_labels(ax, cols_index.ravel(), rows_index.ravel(), [t for row in cells[p.name] for t in row[columns]],
                    contrasting_colours(image.cmap, (data.ravel() - vmin) / (vmax - vmin)), fontsize=points)
        if p.name == "soft" and result.shows_prediction:
            if result.weight_cell is not None:  # a numeric prediction: the cell it is about, in both styles
                mark_cells(ax, [result.weight_cell], [result.weight_cell], range(p.start, p.stop))
            else:
                mark_cells(ax, result.predicted, result.answer, range(p.start, p.stop))
    for index, line in enumerate(layout.choice):  # the student's answer, first line bold
        figure.text(EDGE / width, 1 - (EDGE + index * line_height(points + 0.5)) / height, line, ha="left",
                    va="top", fontsize=points + 0.5, fontweight="bold" if index == 0 else "normal", gid="choice")
    if layout.legend:
        prediction_legend(figure, legend_entries(result), EDGE + choice_height(layout.choice, points), points,
                          2 if layout.legend == 1 else 1)
    if layout.note:
        figure.text(0.08 / width, 0.1 / height, layout.note, fontsize=points, ha="left", va="bottom")
    return figure
