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
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D

# Colour-vision-safe, perceptually uniform maps only.
SEQUENTIAL = "viridis"
ALTERNATE = "cividis"
DIVERGING = "coolwarm"  # for signed values (projections, encodings), with a symmetric range

# Text drawing goes through process-wide font caches; serialising renders keeps them consistent.
RENDER_LOCK = threading.Lock()

DPI = 100


class _SharedRendererCanvas(FigureCanvasAgg):
    """An Agg canvas whose renderer is shared by all figures of one pixel size.

    matplotlib caches text metrics per renderer, and a fresh figure gets a fresh renderer
    (two, in fact: one to lay out, one to draw), so every tick label, title and cell value
    would be measured with FreeType again on every render. With one renderer per size the
    layout and the drawing, and later renders, reuse the measurements. The renderer's
    pixel buffer is shared too, so drawing happens under RENDER_LOCK.
    """

    _renderers: dict[tuple[int, int, float], RendererAgg] = {}
    _MAX_RENDERERS = 16  # figure sizes are fixed per visual kind, so a few are ever made

    def get_renderer(self) -> RendererAgg:
        width, height = self.get_width_height(physical=True)
        key = (width, height, self.figure.dpi)
        renderer = self._renderers.get(key)
        if renderer is None:
            if len(self._renderers) >= self._MAX_RENDERERS:
                self._renderers.clear()
            renderer = self._renderers[key] = RendererAgg(width, height, self.figure.dpi)
        self.renderer = renderer  # FigureCanvasAgg.draw and buffer_rgba use this attribute
        return renderer


def new_figure(width: float, height: float) -> Figure:
    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    _SharedRendererCanvas(figure)  # attaches itself as figure.canvas
    return figure


def settle_layout(figure: Figure) -> None:
    """Run the figure's layout engine once, then fix the positions it chose.

    savefig on a figure that still has a layout engine draws the whole figure twice: once
    without output, to lay it out, and once for real. Running the engine here instead
    gives the same positions (same engine, same dpi) for one draw fewer.
    """
    engine = figure.get_layout_engine()
    if engine is not None and not isinstance(engine, PlaceHolderLayoutEngine):
        engine.execute(figure)
        figure.set_layout_engine(None)


def to_png(figure: Figure) -> bytes:
    """PNG bytes that are identical for identical figures (no timestamp or software metadata)."""
    buffer = io.BytesIO()
    with RENDER_LOCK:
        settle_layout(figure)
        figure.savefig(buffer, format="png", dpi=DPI, metadata={"Software": None})
    return buffer.getvalue()


def to_svg(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    with RENDER_LOCK:
        settle_layout(figure)
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
        span = (vmax - vmin) or 1.0
        rows_index, cols_index = np.indices(values.shape)
        cell_labels(ax, cols_index.ravel(), rows_index.ravel(),
                    [fmt.format(value) for value in np.asarray(values).ravel()],
                    contrasting_colours(image.cmap, (np.asarray(values).ravel() - vmin) / span))
    return image


def contrasting_colours(colormap, fractions) -> list[str]:
    """Black or white text for cells shaded colormap(fraction), whichever contrasts more."""
    shades = np.asarray(colormap(np.asarray(fractions, dtype=float)))[..., :3]  # (cells, 3) RGB
    luminance = shades @ np.array([0.2126, 0.7152, 0.0722])
    return ["black" if value > 0.5 else "white" for value in luminance]


# Outlines of cell labels at a size, centred on (0, 0), in points. The same few strings
# ("0.25", "-1.3", ...) recur in every figure, so each is built once per process.
_LABEL_PATHS: dict[tuple[str, float], Path] = {}
_LABEL_FONT = FontProperties()  # the default sans-serif, as ax.text uses
_MAX_LABEL_PATHS = 4096


def _label_path(label: str, fontsize: float) -> Path:
    key = (label, fontsize)
    path = _LABEL_PATHS.get(key)
    if path is None:
        outline = TextPath((0, 0), label, size=fontsize, prop=_LABEL_FONT)
        extents = outline.get_extents()
        centre = ((extents.x0 + extents.x1) / 2, (extents.y0 + extents.y1) / 2)
        path = Path(outline.vertices - centre, outline.codes)
        if len(_LABEL_PATHS) >= _MAX_LABEL_PATHS:
            _LABEL_PATHS.clear()
        _LABEL_PATHS[key] = path
    return path


def cell_labels(ax: Axes, x, y, labels: Sequence[str], colours: Sequence, fontsize: float = 8) -> None:
    """Write labels[i] centred on data point (x[i], y[i]) in colours[i], as one collection.

    One Text artist per cell is the slowest part of drawing an annotated heatmap (each is
    laid out and rasterised on its own); the glyph outlines drawn as one PathCollection
    show the same numbers in the same font for a fraction of the cost.
    """
    if not len(labels):
        return
    collection = PathCollection(
        [_label_path(label, fontsize) for label in labels],
        offsets=np.column_stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float)]),
        offset_transform=ax.transData,
        transform=Affine2D().scale(ax.figure.dpi / 72.0),  # points -> pixels
        facecolors=list(colours), edgecolors="none", linewidths=0, zorder=3,
    )
    collection.set_in_layout(False)  # inside the axes: measuring it would only slow the layout
    ax.add_collection(collection, autolim=False)
