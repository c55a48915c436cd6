"""Shared figure plumbing: a pyplot-free Figure, deterministic PNG/SVG bytes, and a labelled heatmap.

Every plot module builds on these so that styling, colour maps and byte-for-byte determinism agree.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display in a server; set before any backend is touched

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

# Colour-vision-safe, perceptually uniform maps only.
SEQUENTIAL = "viridis"
ALTERNATE = "cividis"
DIVERGING = "coolwarm"  # for signed values (projections, encodings), with a symmetric range

# Text drawing goes through process-wide font caches; serialising renders keeps them consistent.
RENDER_LOCK = threading.Lock()

DPI = 100


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    return figure


def to_png(figure: Figure) -> bytes:
    """PNG bytes that are identical for identical figures (no timestamp or software metadata)."""
    buffer = io.BytesIO()
    with RENDER_LOCK:
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def to_svg(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    with RENDER_LOCK:
        # A fixed hashsalt and no date make the SVG deterministic.
        with matplotlib.rc_context({"svg.hashsalt": "attention-quiz", "svg.fonttype": "none"}):
            figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


def symmetric_limit(*arrays: np.ndarray) -> float:
    """The half-range for a diverging colour map centred on zero, from the data itself."""
    peak = max(float(np.max(np.abs(a))) for a in arrays if np.size(a))
    return peak if peak > 0 else 1.0


def heatmap(
    ax: Axes,
    values: np.ndarray,
    *,
    row_labels: Sequence[str] | None = None,
    col_labels: Sequence[str] | None = None,
    vmin: float,
    vmax: float,
    cmap: str = SEQUENTIAL,
    annotate: bool = True,
    fmt: str = "{:.2f}",
    row_title: str | None = None,
    col_title: str | None = None,
    title: str | None = None,
):
    """Draw a matrix with rows top to bottom and columns left to right; returns the image for a colour bar.

    For attention weights, rows are queries and columns are keys: pass row_title="query",
    col_title="key", and vmin=0, vmax=1 (the weights' true range).
    """
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    rows, cols = values.shape
    ax.set_xticks(range(cols), labels=list(col_labels) if col_labels is not None else [str(i) for i in range(cols)])
    ax.set_yticks(range(rows), labels=list(row_labels) if row_labels is not None else [str(i) for i in range(rows)])
    ax.tick_params(axis="x", labelrotation=45 if col_labels is not None and max(map(len, col_labels), default=0) > 3 else 0)
    if row_title:
        ax.set_ylabel(row_title)
    if col_title:
        ax.set_xlabel(col_title)
    if title:
        ax.set_title(title)
    if annotate and rows * cols <= 256:
        colormap = image.cmap
        span = (vmax - vmin) or 1.0
        for i in range(rows):
            for j in range(cols):
                shade = colormap((values[i, j] - vmin) / span)
                luminance = 0.2126 * shade[0] + 0.7152 * shade[1] + 0.0722 * shade[2]
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", fontsize=8,
                        color="black" if luminance > 0.5 else "white")
    return image
