"""The naive baseline for the plot benchmark: each visual drawn the way a first version would be.

It draws the same figure as the app, panel for panel and number for number, because it runs the
kind's own compute, words and drawing code (kind.describe, then kind.draw), with the naive machinery
swapped in:

- `app.plots.figure.new_figure`, the one figure factory every draw function calls, makes a pyplot
  figure (`plt.figure(figsize=..., dpi=100)`, no layout engine), so `figure.subplots(...)` is what
  `plt.subplots` gives;
- `cell_labels` (the heatmaps' cell numbers) writes one `ax.text` per cell instead of the app's
  single collection of glyph outlines;
- the image is `fig.tight_layout()`, then `fig.savefig(...)` (PNG at 100 dpi, or SVG for an SVG
  kind, matplotlib's defaults otherwise), then `plt.close(fig)`.

Positions differ a little because tight_layout is not the app's layout; the panels, titles, labels,
colour bars and cell numbers are the same. The patching is process-wide, so it only ever runs in its
own worker process (bench._worker "naive").
"""

from __future__ import annotations

import importlib
import io
import pkgutil
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the point of the baseline)

DPI = 100
_installed = False


def _pyplot_figure(width: float, height: float, layout: str | None = None):
    return plt.figure(figsize=(width, height), dpi=DPI)


def _text_per_cell(ax, x, y, labels, colours, fontsize: float = 8) -> None:
    for xi, yi, label, colour in zip(x, y, labels, colours):
        ax.text(xi, yi, label, ha="center", va="center", fontsize=fontsize, color=colour)


def save(figure, image_format: str) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tight_layout warns about colour-bar axes; it still runs
        figure.tight_layout()
        figure.savefig(buffer, format=image_format, dpi=DPI)
    plt.close(figure)
    return buffer.getvalue()


def install() -> None:
    """Swap the naive machinery into every app.plots module (this process only).

    The draw modules import new_figure and cell_labels by name, so each module's own name is
    replaced; app.plots.figure's heatmap() finds cell_labels in its module, which is replaced too.
    """
    global _installed
    if _installed:
        return
    import app.plots

    patched = []
    for info in pkgutil.iter_modules(app.plots.__path__):
        module = importlib.import_module(f"app.plots.{info.name}")
        if hasattr(module, "new_figure"):
            module.new_figure = _pyplot_figure
            patched.append(info.name)
        if hasattr(module, "cell_labels"):
            module.cell_labels = _text_per_cell
    if "figure" not in patched:
        raise RuntimeError("app.plots.figure.new_figure is gone: the naive baseline cannot swap pyplot in")
    _installed = True


def naive_render(kind_name: str):
    """A callable drawing `kind_name` with default params the naive way; returns the image bytes."""
    install()
    from app.visuals import get_kind

    kind = get_kind(kind_name)
    params = kind.parse({})

    def render() -> bytes:
        computed = kind.describe(params)  # the engine, alt text and caption, as kind.render does
        figure = kind.draw(params, computed.result, kind.figure_inches(params))
        return save(figure, kind.format)

    return render
