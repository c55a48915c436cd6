"""Instructor charts: horizontal bar charts of counts (answers picked, score bands) as PNG plus alt text.

A `CountChart` holds the numbers; `render_png` and `alt_text` both read only it, so the picture and
its description cannot disagree. Built with matplotlib's Figure API (never pyplot), imported only
when a chart is drawn, so starting the app does not load matplotlib.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..visuals.base import NARROW_WIDTH, line_height, pixel_size, wrap_lines

WIDE = 6.4  # inches
TITLE_SIZE = 10  # points
LAYOUTS = ("wide", "narrow")  # narrow: drawn at a phone's width, so that its 10 pt text reads at 10 pt there


def _colours() -> tuple[tuple, str]:
    """(highlight, plain): a dark blue from the colour-vision-safe map for the correct bars (also hatched, and
    "(correct)" in their labels, so colour is never the only cue and no legend covers a bar), and a neutral light
    grey for the others. Not the map's bright green end, which instructors read as "correct" on wrong answers."""
    from matplotlib import colormaps

    from ..plots.figure import SEQUENTIAL

    return colormaps[SEQUENTIAL](0.3), "#c9c9d3"


@dataclass(frozen=True)
class CountChart:
    title: str
    subject: str  # what each bar counts, for the alt text: "answers", "finished attempts"
    category_title: str  # the axis that names the bars
    labels: tuple[str, ...]
    counts: tuple[int, ...]
    highlighted: tuple[bool, ...]  # e.g. the correct options
    highlight_label: str = "correct"
    intro: str = ""  # one sentence placed before the counts in the alt text
    skip_zero_in_alt: bool = False

    def __post_init__(self):
        if not (len(self.labels) == len(self.counts) == len(self.highlighted)):
            raise ValueError("labels, counts and highlighted need one entry per bar")

    @property
    def alt(self) -> str:
        return alt_text(self)

    def title_lines(self, layout: str = "wide") -> list[str]:
        """The title as drawn from the figure's left edge, wrapped to its width (the bars' labels may be long)."""
        return wrap_lines(self.title, (WIDE if layout == "wide" else NARROW_WIDTH) - 0.2, TITLE_SIZE)

    def inches(self, layout: str = "wide") -> tuple[float, float]:
        """The figure's (width, height): a fixed width (a phone's on `narrow`), a row of 0.42 inch per bar, and a
        line per further line of the title."""
        extra = (len(self.title_lines(layout)) - 1) * line_height(TITLE_SIZE)
        return WIDE if layout == "wide" else NARROW_WIDTH, round(1.2 + 0.42 * max(len(self.labels), 1) + extra, 2)

    def size(self, layout: str = "wide") -> tuple[int, int]:
        """The PNG's (width, height) in pixels, for the page's <img> and <source> tags, without drawing."""
        return pixel_size(self.inches(layout))


def alt_text(chart: CountChart) -> str:
    parts = []
    for label, count, highlighted in zip(chart.labels, chart.counts, chart.highlighted):
        if chart.skip_zero_in_alt and count == 0:
            continue
        mark = f" ({chart.highlight_label})" if highlighted else ""
        parts.append(f"{label}{mark}: {count}")
    listed = "; ".join(parts) if parts else "none"
    tail = " Bands not listed are empty." if chart.skip_zero_in_alt and len(parts) < len(chart.labels) else ""
    intro = f"{chart.intro} " if chart.intro else ""
    return f"Bar chart: {chart.title}. {intro}Number of {chart.subject}: {listed}.{tail}"


@lru_cache(maxsize=128)
def render_png(chart: CountChart, layout: str = "wide") -> bytes:
    """Deterministic PNG bytes; cached because the same counts are asked for on every page view."""
    from ..plots.figure import to_png

    return to_png(draw_chart(chart, layout))


def draw_chart(chart: CountChart, layout: str = "wide"):
    """The chart's matplotlib Figure, at a desktop's width or (narrow) a phone's."""
    from ..plots.figure import new_figure

    highlight_colour, plain_colour = _colours()
    bars = len(chart.labels)
    figure = new_figure(*chart.inches(layout))
    ax = figure.add_subplot()
    positions = range(bars)
    colours = [highlight_colour if h else plain_colour for h in chart.highlighted]
    hatches = ["//" if h else "" for h in chart.highlighted]
    container = ax.barh(positions, chart.counts, color=colours, hatch=hatches, edgecolor="#1d1b2f", linewidth=0.6)
    labels = [f"{label} ({chart.highlight_label})" if h else label
              for label, h in zip(chart.labels, chart.highlighted)]
    ax.set_yticks(list(positions), labels=labels)
    ax.invert_yaxis()  # first category on top, as in the table under the chart
    ax.bar_label(container, padding=3)
    peak = max(chart.counts, default=0)
    ax.set_xlim(0, max(peak, 1) * 1.15)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(f"number of {chart.subject}")
    ax.set_ylabel(chart.category_title)
    # From the figure's left edge, not the axes': long labels of the bars may take half of it.
    figure.suptitle("\n".join(chart.title_lines(layout)), x=0.02, ha="left", fontsize=TITLE_SIZE)
    ax.spines[["top", "right"]].set_visible(False)
    return figure
