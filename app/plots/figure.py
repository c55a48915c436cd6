"""Shared figure plumbing: a pyplot-free Figure, deterministic PNG/SVG bytes, and a labelled heatmap.

Every plot module builds on these so that styling, colour maps and byte-for-byte determinism agree.
"""

from __future__ import annotations

import io
import math
import threading
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display in a server; set before any backend is touched

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg, get_hinting_flag
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, fontManager, get_font
from matplotlib.ft2font import FT2Font
from matplotlib.layout_engine import PlaceHolderLayoutEngine
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.transforms import Affine2D
from PIL import Image

from .describe import symmetric_limit  # noqa: F401  (re-exported: plots import it from here)
from .layout import GridLayout
from .sizes import DPI

# Colour-vision-safe, perceptually uniform maps only.
SEQUENTIAL = "viridis"
ALTERNATE = "cividis"
DIVERGING = "coolwarm"  # for signed values (projections, encodings), with a symmetric range

# Text drawing goes through process-wide font caches; serialising renders keeps them consistent.
RENDER_LOCK = threading.Lock()


try:  # matplotlib >= 3.10 lays text out and renders it glyph by glyph, which the cache below follows
    from matplotlib.ft2font import RenderMode

    _CAN_CACHE_GLYPHS = hasattr(RendererAgg, "_draw_text_glyphs_and_boxes") and hasattr(FT2Font, "_layout")
except ImportError:  # pragma: no cover - older matplotlib: plain Agg text drawing
    _CAN_CACHE_GLYPHS = False


def _font_key(prop: FontProperties) -> tuple:
    """A hashable snapshot of a FontProperties (which is mutable, so it is not kept as a key itself)."""
    return (tuple(prop.get_family()), prop.get_slant(), prop.get_variant(), prop.get_weight(),
            prop.get_stretch(), prop.get_size_in_points(), prop.get_file(), prop.get_math_fontfamily())


def _hashable(value):
    return tuple(value) if isinstance(value, list) else value


class _CachingRendererAgg(RendererAgg):
    """An Agg renderer that keeps what it has learnt about text from one figure to the next.

    Every render draws the same few strings (tick labels, titles, axis labels), and Agg lays
    out and rasterises each glyph of each string with FreeType on every draw. Here a string's
    glyphs are rasterised once, merged into one coverage bitmap, and later drawn with one
    `draw_text_image` at the text's origin rounded to a whole pixel (what matplotlib did before
    3.10: a string was one bitmap placed at integer coordinates). The font's line-height
    metrics, which `Text` reads from the font's tables for every layout, are kept too.
    """

    # Shared by the renderers of every size (keys hold the dpi), and bounded: strings differ per
    # parameter, and a long-running server's memory must stay flat (8192 runs of ~1 KB at most).
    _MAX_RUNS = 8192
    _shared_runs: dict[tuple, tuple[np.ndarray, int, int] | None] = {}
    _shared_line_metrics: dict[tuple, tuple[float, float, float]] = {}

    def __init__(self, width, height, dpi):
        super().__init__(width, height, dpi)
        self._runs = self._shared_runs
        self._line_metrics = self._shared_line_metrics

    def _get_font_height_metrics(self, prop):
        # Text._get_layout asks this hook first; the numbers are those it would compute itself.
        key = (_font_key(prop), self.dpi)
        metrics = self._line_metrics.get(key)
        if metrics is None:
            font = get_font(fontManager._find_fonts_by_props(prop))
            metrics = (None, None, None)
            for table_name, gap_key, ascent_key, descent_key in (
                    ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                    ("hhea", "lineGap", "ascent", "descent")):
                table = font.get_sfnt_table(table_name)
                if table is None:
                    continue
                scale = prop.get_size_in_points() * self.dpi / 72 / font.get_sfnt_table("head")["unitsPerEm"]
                metrics = (table[ascent_key] * scale, -table[descent_key] * scale, table[gap_key] * scale)
                break
            self._line_metrics[key] = metrics
        return metrics

    def _run(self, key, angle: float, antialiased: bool, glyphs) -> tuple[np.ndarray, int, int] | None:
        """The merged coverage bitmap of `glyphs` drawn from origin (0, 0), and its top-left corner."""
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        flags = get_hinting_flag()
        pieces = []
        for font, size, glyph_index, slant, extend, dx, dy in glyphs:  # dy is upwards
            font.set_size(size, self.dpi)
            font._set_transform(
                (0x10000 * np.array([[cos, -sin], [sin, cos]]) @ [[extend, extend * slant], [0, 1]])
                .round().astype(int),
                [round(0x40 * (dx * cos - dy * sin)), round(0x40 * (dx * sin + dy * cos))])
            bitmap = font._render_glyph(glyph_index, flags, RenderMode.NORMAL if antialiased else RenderMode.MONO)
            buffer = np.array(bitmap.buffer, dtype=np.uint8)  # a copy: FreeType reuses its buffer
            if not antialiased:
                buffer *= 0xFF
            if buffer.size:
                pieces.append((buffer, bitmap.left, bitmap.top))  # top is upwards
        run = None
        if pieces:
            left = min(p[1] for p in pieces)
            top = max(p[2] for p in pieces)
            right = max(p[1] + p[0].shape[1] for p in pieces)
            bottom = min(p[2] - p[0].shape[0] for p in pieces)
            coverage = np.zeros((top - bottom, right - left), dtype=np.uint8)
            for buffer, x0, y0 in pieces:
                window = coverage[top - y0:top - y0 + buffer.shape[0], x0 - left:x0 - left + buffer.shape[1]]
                np.maximum(window, buffer, out=window)
            run = (coverage, left, top)
        if len(self._runs) >= self._MAX_RUNS:
            self._runs.clear()
        self._runs[key] = run
        return run

    def _draw_run(self, gc, x, y, angle, key, glyphs, boxes=()):
        origin_x, origin_up = round(x), round(self.height - y)  # y is downwards, FreeType's upwards
        run = self._runs[key] if key in self._runs else self._run(key, angle, gc.get_antialiased(), glyphs())
        if run is not None:
            coverage, left, top = run
            # draw_text_image takes the bitmap's left and its bottom edge, downwards.
            self._renderer.draw_text_image(coverage, origin_x + left,
                                           int(self.height) - (origin_up + top) + coverage.shape[0], 0, gc)
        if boxes:
            self._draw_text_glyphs_and_boxes(gc, origin_x, self.height - origin_up, angle, (), boxes)

    def draw_text(self, gc, x, y, s, prop, angle, ismath=False, mtext=None):
        if ismath == "TeX" or not _CAN_CACHE_GLYPHS:
            return super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)
        if ismath:
            return self.draw_mathtext(gc, x, y, s, prop, angle)
        features = _hashable(mtext.get_fontfeatures()) if mtext is not None else None
        language = _hashable(mtext.get_language()) if mtext is not None else None
        key = (s, _font_key(prop), angle, gc.get_antialiased(), features, language, get_hinting_flag(), self.dpi)

        def glyphs():
            font = self._prepare_font(prop)
            size = prop.get_size_in_points()
            for item in font._layout(s, flags=get_hinting_flag(), features=features, language=language):
                yield item.ft_object, size, item.glyph_index, 0, 1, item.x, item.y

        self._draw_run(gc, x, y, angle, key, glyphs)

    def draw_mathtext(self, gc, x, y, s, prop, angle):
        if not _CAN_CACHE_GLYPHS:
            return super().draw_mathtext(gc, x, y, s, prop, angle)
        parse = self.mathtext_parser.parse(s, self.dpi, prop, antialiased=gc.get_antialiased())
        key = ("$", s, _font_key(prop), angle, gc.get_antialiased(), get_hinting_flag(), self.dpi)

        def glyphs():
            for font, size, _char, glyph_index, dx, dy in parse.glyphs:
                yield font, size, glyph_index, 0, 1, dx, dy

        self._draw_run(gc, x, y, angle, key, glyphs, tuple(parse.rects))


class _SharedRendererCanvas(FigureCanvasAgg):
    """An Agg canvas whose renderer is shared by all figures of one pixel size.

    matplotlib caches text metrics per renderer, and a fresh figure gets a fresh renderer
    (two, in fact: one to lay out, one to draw), so every tick label, title and cell value
    would be measured with FreeType again on every render. With one renderer per size the
    layout and the drawing, and later renders, reuse the measurements. The renderer's
    pixel buffer is shared too, so drawing happens under RENDER_LOCK.
    """

    _renderers: dict[tuple[int, int, float], _CachingRendererAgg] = {}
    _MAX_RENDERERS = 16  # figure sizes are fixed per visual kind, so a few are ever made

    def get_renderer(self) -> RendererAgg:
        width, height = self.get_width_height(physical=True)
        key = (width, height, self.figure.dpi)
        renderer = self._renderers.get(key)
        if renderer is None:
            if len(self._renderers) >= self._MAX_RENDERERS:
                self._renderers.clear()
            renderer = self._renderers[key] = _CachingRendererAgg(width, height, self.figure.dpi)
        self.renderer = renderer  # FigureCanvasAgg.draw and buffer_rgba use this attribute
        return renderer


def new_figure(width: float, height: float, layout: str = "constrained") -> Figure:
    """A figure on the shared-renderer canvas; layout="grid" places it with the one-pass GridLayout."""
    figure = Figure(figsize=(width, height), dpi=DPI, layout=GridLayout() if layout == "grid" else layout)
    _SharedRendererCanvas(figure)  # attaches itself as figure.canvas
    return figure


def settle_layout(figure: Figure) -> None:
    """Run the figure's layout engine once, then fix the positions it chose.

    savefig on a figure that still has a layout engine draws the whole figure twice: once
    without output, to lay it out, and once for real. Running the engine here instead
    gives the same positions (same engine, same dpi) for one draw fewer.
    """
    engine = figure.get_layout_engine()
    if engine is not None:
        if not isinstance(engine, PlaceHolderLayoutEngine):
            engine.execute(figure)
        # Even the placeholder left by set_layout_engine("none") makes savefig draw twice.
        figure.set_layout_engine(None)


# zlib level 3 of an RGB image: measured on the visuals' figures it is about a third faster than
# savefig's level 6 of RGBA, and the bytes are 6-13 % fewer (the dropped alpha channel is all opaque).
PNG_COMPRESS_LEVEL = 3


def to_png(figure: Figure) -> bytes:
    """PNG bytes that are identical for identical figures (no timestamp or software metadata).

    The same pixels savefig would write (the figure is drawn at its own dpi on its own facecolour),
    stored as RGB when every pixel is opaque, and encoded outside the lock.
    """
    with RENDER_LOCK:
        settle_layout(figure)
        canvas = figure.canvas
        canvas.draw()
        rgba = np.asarray(canvas.buffer_rgba())  # (height, width, 4), the shared renderer's buffer
        opaque = bool(rgba[..., 3].min() == 255)
        pixels = np.ascontiguousarray(rgba[..., :3] if opaque else rgba)  # a copy, before the buffer is reused
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(  # RGB or RGBA from the array's shape
        buffer, format="png", compress_level=PNG_COMPRESS_LEVEL, dpi=(figure.dpi, figure.dpi))
    return buffer.getvalue()


_TEXT_METRICS: dict[tuple, tuple[float, float, float]] = {}


def _svg_renderer(width: float, height: float, stream, image_dpi: float, metadata: dict):
    """An SVG renderer that remembers text metrics across figures (SVG sizes text in points,
    whatever the figure, so a string's width, height and descent never change)."""
    from matplotlib.backends.backend_svg import RendererSVG

    class _CachingRendererSVG(RendererSVG):
        def get_text_width_height_descent(self, s, prop, ismath):
            key = (s, _font_key(prop), ismath)
            metrics = _TEXT_METRICS.get(key)
            if metrics is None:
                if len(_TEXT_METRICS) >= _MAX_LABEL_PATHS:
                    _TEXT_METRICS.clear()
                metrics = _TEXT_METRICS[key] = super().get_text_width_height_descent(s, prop, ismath)
            return metrics

    return _CachingRendererSVG(width, height, stream, image_dpi=image_dpi, metadata=metadata)


def to_svg(figure: Figure) -> bytes:
    """SVG bytes, identical for identical figures: what savefig(format="svg") writes, drawn once
    with remembered text metrics (savefig would measure every string with FreeType again)."""
    from matplotlib.backends.backend_mixed import MixedModeRenderer

    buffer = io.StringIO()
    with RENDER_LOCK:
        settle_layout(figure)
        # A fixed hashsalt and no date make the SVG deterministic.
        with matplotlib.rc_context({"svg.hashsalt": "attention-quiz", "svg.fonttype": "none"}):
            dpi = figure.dpi
            width, height = figure.get_size_inches()
            figure.dpi = 72  # SVG's user unit is the point (as FigureCanvasSVG.print_svg does)
            try:
                renderer = MixedModeRenderer(
                    figure, width, height, dpi,
                    _svg_renderer(width * 72, height * 72, buffer, dpi, {"Date": None, "Creator": None}))
                figure.draw(renderer)
                renderer.finalize()
            finally:
                figure.dpi = dpi
    return buffer.getvalue().encode("utf-8")


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
    """Draw a matrix with rows top to bottom and columns left to right; returns the image for a colour bar.

    For attention weights, rows are queries and columns are keys: pass row_title="query",
    col_title="key", and vmin=0, vmax=1 (the weights' true range). x_tick_params/y_tick_params
    (Axes.tick_params keywords, e.g. labelrotation=90 or labelleft=False) are set before the ticks
    exist, so each tick is made with them instead of being restyled one by one afterwards.
    """
    image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
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
        transform=Affine2D().scale(ax.figure.dpi / 72.0),  # points -> pixels
        facecolors=list(colours), edgecolors="none", linewidths=0, zorder=3,
    )
    collection.set_in_layout(False)  # inside the axes: measuring it would only slow the layout
    collection.cell_texts = tuple(labels)  # what the outlines spell, for whoever inspects the figure
    ax.add_collection(collection, autolim=False)
