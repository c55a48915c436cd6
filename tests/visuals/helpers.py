"""Naive references and figure readers shared by the kind-specific tests."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from matplotlib.collections import QuadMesh

from app.visuals import get_kind
from app.visuals.toy import LEXICON, MAX_TOKENS


def computed(kind_name: str, values: dict):
    """(params, result, figure, alt, caption) of one computation, the figure drawn as the page's wide image."""
    kind = get_kind(kind_name)
    params = kind.parse(values)
    result = kind.compute(params)
    figure = kind.draw(params, result, kind.figure_inches(params))
    return params, result, figure, kind.alt(params, result), kind.caption(params, result)


def words(kind_name: str, values: dict) -> tuple[str, str | None]:
    """The alt text and caption of one computation, without drawing."""
    kind = get_kind(kind_name)
    params = kind.parse(values)
    result = kind.compute(params)
    return kind.alt(params, result), kind.caption(params, result)


def naive_softmax(row):
    peak = max(row)
    exps = [math.exp(value - peak) for value in row]
    total = sum(exps)
    return [value / total for value in exps]


def naive_matmul(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return np.array([[sum(a[i, m] * b[m, j] for m in range(a.shape[1])) for j in range(b.shape[1])]
                     for i in range(a.shape[0])])


def first_max(matrix):
    """(value, row, column) of the first largest entry in row-major order, by a plain loop."""
    best = (-math.inf, -1, -1)
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            if value > best[0]:
                best = (float(value), i, j)
    return best


def grids(ax) -> list:
    """The grids of cells drawn in ax (app.plots.figure.cells' meshes), none of them a colour bar's own."""
    bars = {mesh.colorbar.solids for other in ax.figure.axes for mesh in other.collections
            if getattr(mesh, "colorbar", None) is not None}
    return [c for c in ax.collections if isinstance(c, QuadMesh) and c not in bars]


def grid(ax):
    """The one grid of cells in ax."""
    (mesh,) = grids(ax)
    return mesh


def heatmap_axes(figure):
    return [ax for ax in figure.axes if grids(ax)]


def tick_texts(labels):
    return [label.get_text() for label in labels]


def row_labels(ax):
    """The y tick labels' texts, including ones hidden beside a neighbouring panel."""
    return [tick.label1.get_text() for tick in ax.yaxis.get_major_ticks()]


def texts_of(figure) -> list[str]:
    """Every string drawn in the axes: Text artists and the cell numbers drawn as glyph outlines."""
    return [*(text.get_text() for ax in figure.axes for text in ax.texts),
            *(label for ax in figure.axes for collection in ax.collections
              for label in getattr(collection, "cell_texts", ()))]


# Sentences a student could type: lexicon words (ties: repeated words, words sharing every feature),
# unknown words, and mixed case.
WORD = st.one_of(st.sampled_from(sorted(LEXICON)), st.sampled_from(["zorblax", "quux", "Cat", "RAN"]))
SENTENCE = st.lists(WORD, min_size=1, max_size=MAX_TOKENS).map(" ".join).filter(lambda text: len(text) <= 80)


def texts_outside(figure) -> list[tuple[str, object]]:
    """(text, window extent) of every drawn text that runs past the figure's left or right edge: figure texts,
    titles, labels, annotations and the tick labels at ticks inside their axes' view (others are not drawn)."""
    from matplotlib.text import Text

    figure.canvas.draw()
    renderer, frame = figure.canvas.get_renderer(), figure.bbox
    undrawn = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    undrawn.update((id(tick.label1), id(tick.label2)))
    outside = []
    for text in figure.findobj(Text):
        if text.get_visible() and text.get_text() and id(text) not in undrawn:
            box = text.get_window_extent(renderer)
            if box.x0 < frame.x0 - 1 or box.x1 > frame.x1 + 1:
                outside.append((text.get_text(), box))
    return outside
