"""Shared figure plumbing: the one figure factory, deterministic PNG/SVG bytes, and a labelled heatmap.

Every plot module builds on these so that styling, colour maps and byte-for-byte determinism agree.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib import patheffects
from matplotlib.font_manager import FontProperties
from matplotlib.patches import Patch, Rectangle
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D
from PIL import Image

from app.visuals.base import DPI, line_height  # noqa: F401 (line_height: for the plots' layouts)

# Colour-vision-safe, perceptually uniform maps only.
SEQUENTIAL = "viridis"
DIVERGING = "coolwarm"  # for signed values (projections, encodings), with a symmetric range

# matplotlib is not thread-safe ("if you work with threads, it is your responsibility to set up the
# proper locks to serialize access to Matplotlib artists", its FAQ), and drawing goes through
# process-wide text and mathtext caches: a process builds and draws one figure at a time
# (VisualKind.picture holds this lock from the first artist to the image's bytes). Drawing is
# CPU-bound under the GIL, so a second figure at once would be no faster, only a second figure's
# memory on top of the first.
RENDER_LOCK = threading.Lock()

# zlib level 3 of an RGB image: measured on the visuals' figures it is about a third faster than
# savefig's level 6 of RGBA, and the bytes are 6-13 % fewer (the dropped alpha channel is all opaque).
PNG_COMPRESS_LEVEL = 3


def inch_axes(figure: Figure, left: float, top: float, width: float, height: float):
    """Axes `width` × `height` inches, `left` and `top` inches from the figure's top-left corner."""
    figure_width, figure_height = figure.get_size_inches()
    return figure.add_axes((left / figure_width, 1 - (top + height) / figure_height, width / figure_width,
                            height / figure_height))


def new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
    """A pyplot-free figure of width × height inches on an Agg canvas, at the pages' DPI.

    layout is "constrained", or None when the caller places its axes itself (fixed_grid): the
    constrained engine measures every label of every axes twice per render, which costs as much
    as drawing the figure.
    """
    figure = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(figure)  # attaches itself as figure.canvas
    return figure


# Room that labels take, in inches, at matplotlib's default sizes (10 pt tick and axis labels,
# 12 pt titles), for fixed layouts: margin = EDGE + what sits there.
EDGE = 0.05  # between the outermost labels and the figure's edge
TICK = 7 / 72  # a tick (3.5 pt) and the pad to its label (3.5 pt)
LABEL_PAD = 4 / 72  # between the tick labels and the axis label
TITLE_PAD = 6 / 72  # between the axes and its title
COLORBAR_PAD = 0.1  # between a grid and its colour bar


def text_width(figure: Figure, texts: Sequence[str], fontsize: float = 10.0) -> float:
    """The width in inches of the widest of `texts` (plain text, default font), as the figure's
    renderer measures it (so positions can be computed before anything is drawn)."""
    renderer = figure.canvas.get_renderer()
    font = FontProperties(size=fontsize)
    widths = [renderer.get_text_width_height_descent(text, font, ismath=False)[0] for text in texts]
    return max(widths, default=0.0) / figure.dpi


def fixed_grid(figure: Figure, *, rows: int = 1, cols: int = 1, left: float, right: float, bottom: float,
               top: float, col_gap: float = 0.0, row_gap: float = 0.0, colorbar: float = 0.0,
               colorbar_pad: float = COLORBAR_PAD) -> dict:
    """Fix where figure.subplots(rows, cols) (or subplot_mosaic) puts its axes: margins from the
    figure's edges and gaps between axes in inches, each the room its labels need.

    colorbar is the width in inches (bar, tick labels and label) that a colour bar beside the
    whole grid needs, colorbar_pad inches from the grid. Returns the keywords that give it that
    room, for `figure.colorbar(..., ax=every axes, **returned)`, which takes it by scaling the
    grid leftwards; the gaps here are the gaps after that.
    """
    width, height = figure.get_size_inches()
    grid_width = width - left - right
    pad = colorbar_pad if colorbar else 0.0
    axes_width = (grid_width - colorbar - pad - (cols - 1) * col_gap) / cols
    axes_height = (height - bottom - top - (rows - 1) * row_gap) / rows
    # wspace and hspace are fractions of the mean axes width and height (which the scaling keeps).
    figure.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height,
                           top=1 - top / height, wspace=col_gap / axes_width, hspace=row_gap / axes_height)
    return {"fraction": colorbar / grid_width, "pad": pad / grid_width}


def to_png(figure: Figure, dpi: float | None = None) -> bytes:
    """PNG bytes that are identical for identical figures (no timestamp or software metadata).

    The pixels savefig would write (the figure drawn once at its own dpi, or at `dpi`, its layout
    engine run in that draw), stored as RGB when every pixel is opaque.
    """
    if dpi is not None:
        figure.set_dpi(dpi)
    canvas = figure.canvas if isinstance(figure.canvas, FigureCanvasAgg) else FigureCanvasAgg(figure)
    canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())  # (height, width, 4), the canvas's own pixels
    image = Image.fromarray(rgba)  # RGBA, sharing those pixels (no copy)
    if rgba[..., 3].min() == 255:
        image = image.convert("RGB")  # one copy, three bytes a pixel
    buffer = io.BytesIO()
    image.save(buffer, format="png", compress_level=PNG_COMPRESS_LEVEL, dpi=(figure.dpi, figure.dpi))
    return buffer.getvalue()


def to_svg(figure: Figure) -> bytes:
    """SVG bytes, identical for identical figures: a fixed hash salt, and no date or creator.

    Text is drawn as glyph outlines ("path"), not as <text> in the browser's fonts: matplotlib lays out
    sub- and superscripts with its own font's metrics, which another font would not match.
    """
    buffer = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "attention-quiz", "svg.fonttype": "path"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


def cells(ax: Axes, values: np.ndarray, *, extent: tuple[float, float, float, float] | None = None, **style):
    """values (rows, cols) as a grid of cells, row 0 at the top: cell (i, j) centred on the data point (j, i), as
    imshow places it, and the limits set to frame the grid; or with extent=(left, right, bottom, top), the grid
    filling that box, row 0 along `top`, and the limits left to the caller. `style`: pcolormesh's keywords (cmap,
    vmin, vmax). Returns the mesh, for a colour bar.

    A mesh of quads, not an image: imshow resamples to the screen's pixels through arrays of four floats a pixel
    (14 MB at once for one heatmap at 2x, measured), where a mesh draws each cell once. The pixels agree to one
    level of 255; a figure draws within a few per cent of imshow's time, order-blindness's 0.86× at 2x
    (measured), and an SVG holds the cells themselves."""
    rows, cols = values.shape
    left, right, bottom, top = extent or (-0.5, cols - 0.5, rows - 0.5, -0.5)
    mesh = ax.pcolormesh(np.linspace(left, right, cols + 1), np.linspace(top, bottom, rows + 1), values, **style)
    if extent is None:
        ax.set(xlim=(left, right), ylim=(bottom, top))
    return mesh


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
    x_tick_params: dict | None = None,
    y_tick_params: dict | None = None,
):
    """Draw a matrix with rows top to bottom and columns left to right; returns the mesh for a colour bar.

    For attention weights, rows are queries and columns are keys: pass row_title="query",
    col_title="key", and vmin=0, vmax=1 (the weights' true range). x_tick_params/y_tick_params
    (Axes.tick_params keywords, e.g. labelrotation=90 or labelleft=False) are set before the ticks
    exist, so each tick is made with them instead of being restyled one by one afterwards.
    """
    image = cells(ax, values, cmap=cmap, vmin=vmin, vmax=vmax)
    rows, cols = values.shape
    long_labels = col_labels is not None and max(map(len, col_labels), default=0) > 3
    ax.tick_params(axis="x", **{"labelrotation": 45 if long_labels else 0, **(x_tick_params or {})})
    if y_tick_params:
        ax.tick_params(axis="y", **y_tick_params)
    ax.set_xticks(range(cols), labels=list(col_labels) if col_labels is not None else [str(i) for i in range(cols)])
    ax.set_yticks(range(rows), labels=list(row_labels) if row_labels is not None else [str(i) for i in range(rows)])
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
        transform=Affine2D().scale(1 / 72) + ax.figure.dpi_scale_trans,  # points -> inches -> pixels, at any dpi
        facecolors=list(colours), edgecolors="none", linewidths=0, zorder=3,
    )
    collection.set_in_layout(False)  # inside the axes: measuring it would only slow the layout
    collection.cell_texts = tuple(labels)  # what the outlines spell, for whoever inspects the figure
    ax.add_collection(collection, autolim=False)


# Predict, then reveal: the answer's cells outlined with a solid black line just inside the cell's edge, the
# student's with vermillion dashes on the edge, each on a thin white halo so it reads on any shade of the map;
# neither reaches the cell's number or its neighbours'. Dashes against a solid line tell them apart without colour
# (Okabe and Ito's vermillion is safe for colour-blind readers too).
PREDICTED_STYLE = {"edgecolor": "#D55E00", "linestyle": (0, (3, 2)), "linewidth": 2.0}
ANSWER_STYLE = {"edgecolor": "black", "linestyle": "solid", "linewidth": 2.0}
INSETS = {"answer": 0.1, "predicted": -0.01}  # of a cell, on each side (negative: outside the cell)
HALO = 3.0  # points: the white under an outline


def outline(ax: Axes, x: float, y: float, width: float, height: float, style: dict, inset: float = 0.0,
            gid: str | None = None) -> None:
    """A box's outline in `style` (ANSWER_STYLE or PREDICTED_STYLE) on a white halo, `inset` inside the box's edges
    (negative: outside), in the axes' data units."""
    ax.add_patch(Rectangle((x + inset, y + inset), width - 2 * inset, height - 2 * inset, fill=False, zorder=4,
                           path_effects=[patheffects.withStroke(linewidth=HALO, foreground="white")], clip_on=False,
                           gid=gid, **style))


def mark_cells(ax: Axes, predicted, answer, columns: range) -> None:
    """Outline the (row, col) cells of `predicted` and `answer` on a heatmap showing `columns` of the matrix."""
    for cells, style, inset in ((answer, ANSWER_STYLE, INSETS["answer"]),
                                (predicted, PREDICTED_STYLE, INSETS["predicted"])):
        for row, col in cells or ():
            if col in columns:
                outline(ax, col - columns.start - 0.5, row - 0.5, 1, 1, style, inset)


def prediction_legend(figure: Figure, labels: tuple[str | None, str], top: float, fontsize: float, columns: int):
    """The legend of mark_cells' outlines, `top` inches below the figure's top edge, at its left; labels[0], the
    student's (dashed), is None when the figure draws no answer of theirs."""
    handles = [Patch(facecolor="white", label=label, **style)
               for label, style in zip(labels, (PREDICTED_STYLE, ANSWER_STYLE)) if label is not None]
    _, height = figure.get_size_inches()
    return figure.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.01, 1 - top / height), ncols=columns,
                         fontsize=fontsize, frameon=False, handlelength=1.6, handleheight=1.0, borderaxespad=0.0)
