"""The naive baseline for the plot benchmark: each visual drawn the way a first version would be.

It draws the same figure as the app, panel for panel and number for number, because it runs the
app's own drawing code for the content, but with the naive machinery swapped in:

- figures from pyplot (`plt.figure`, so every `figure.subplots(...)` is `plt.subplots`);
- one `ax.text` per annotated heatmap cell (instead of the app's single collection);
- `fig.tight_layout()` then `fig.savefig(...)` at 100 dpi, then `plt.close(fig)`.

So it is a faithful re-implementation of every figure (same panels, titles, labels, colour bars and
cell numbers); positions differ slightly because tight_layout is not the app's layout. The patching
is process-wide, so it only ever runs in its own worker process (bench._worker "naive").
"""

from __future__ import annotations

import importlib
import io
import pkgutil
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the point of the baseline)

from bench.stubs import stub_complexity_timing  # noqa: E402

_installed = False


def _pyplot_figure(width: float, height: float, layout: str | None = None):
    return plt.figure(figsize=(width, height), dpi=100)


def _text_per_cell(ax, x, y, labels, colours, fontsize: float = 8) -> None:
    for xi, yi, label, colour in zip(x, y, labels, colours):
        ax.text(xi, yi, label, ha="center", va="center", fontsize=fontsize, color=colour)


def _save(figure, image_format: str) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tight_layout warns about colour-bar axes; it still runs
        figure.tight_layout()
        figure.savefig(buffer, format=image_format, dpi=100)
    plt.close(figure)
    return buffer.getvalue()


def install() -> None:
    """Swap the naive machinery into the app's plot and kind modules (this process only)."""
    global _installed
    if _installed:
        return
    import app.plots
    import app.visuals
    import app.visuals.kinds

    app.visuals.get_kind("soft-lookup")  # registers every kind
    stub_complexity_timing()
    for info in pkgutil.iter_modules(app.plots.__path__):
        module = importlib.import_module(f"app.plots.{info.name}")
        if hasattr(module, "new_figure"):
            module.new_figure = _pyplot_figure
        if hasattr(module, "cell_labels"):
            module.cell_labels = _text_per_cell
    # The kinds import to_png/to_svg from app.plots.figure when they draw, so patching there reaches them.
    figure_module = importlib.import_module("app.plots.figure")
    figure_module.to_png = lambda figure: _save(figure, "png")
    figure_module.to_svg = lambda figure: _save(figure, "svg")
    _installed = True


def naive_render(kind_name: str):
    """A callable drawing `kind_name` with default params the naive way; returns the image bytes."""
    install()
    from app.visuals import get_kind

    kind = get_kind(kind_name)
    params = kind.parse({})
    return lambda: kind.render(params).image
