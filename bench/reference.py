"""The reference figure of issue 11's render goal: a 10×10 annotated heatmap with a colour bar.

The issue measured a fixed-position `Figure` at 0.72× naive pyplot on it. Drawn through app.plots.figure's
module attributes, so bench.naive_plots.install() swaps the naive machinery in as it does for the kinds.
"""

from __future__ import annotations

import numpy as np

SIZE = 10


def reference_heatmap():
    from app.plots import figure as plots

    weights = np.random.default_rng(0).dirichlet(np.ones(SIZE), size=SIZE)  # (10, 10), rows sum to 1
    labels = [f"t{i}" for i in range(SIZE)]
    figure = plots.new_figure(5.2, 4.6, layout=None)
    ax = plots.inch_axes(figure, 0.75, 0.45, 3.6, 3.6)
    mesh = plots.heatmap(ax, weights, row_labels=labels, col_labels=labels, vmin=0.0, vmax=1.0,
                         row_title="query", col_title="key", title="attention weights")
    figure.colorbar(mesh, cax=plots.inch_axes(figure, 4.5, 0.45, 0.15, 3.6))
    return figure
