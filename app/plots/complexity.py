"""Plot for the "complexity" visual: (a) the exact multiply-add count against the swept variable with the
four options' curves, each scaled to the count at the sweep's first point, on log-log axes; (b) each
option divided by the exact count: one that grows like the count lies on 1, one of the same big-O levels off
under a dotted ceiling, one of a higher power keeps rising.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import LogLocator

from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.complexity import CORRECT, ceiling_text, sizes_text

from .figure import PREDICTED_STYLE, SEQUENTIAL, fixed_grid, new_figure

EXACT_COLOUR = "0.78"  # a wide grey band under the options: a line on it grows like the count
# One colour and dash phase per option: where curves coincide, their dashes interleave, so every one
# of them stays visible on the shared line.
OPTION_COLOURS = [matplotlib.colormaps[SEQUENTIAL](fraction) for fraction in (0.0, 0.33, 0.58, 0.8)]
DASH_ON = 4.0  # points; each option is on for one quarter of the pattern
DASH_PERIOD = len(OPTION_COLOURS) * DASH_ON
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def log_y(ax, low: float, high: float) -> None:
    """Log y from low to high with a margin: plain ticks at powers of two over a short range, else
    at powers of ten (at most about five labels)."""
    low, high = low / 1.6, high * 1.6
    ax.set_ylim(low, high)
    if high / low <= 40:
        ticks = [2.0**e for e in range(-8, 8) if low <= 2.0**e <= high]
        ax.set_yticks(ticks, labels=[f"{t:g}" for t in ticks])
    else:
        decades = max(1, int(np.ceil(np.log10(high / low))))
        step = max(1, int(np.ceil(decades / 5)))
        ax.yaxis.set_major_locator(LogLocator(base=10.0 ** step, numticks=12))
        # 10⁴ in plain text: matplotlib's default 10^4 labels go through mathtext, a fifth of the render's time.
        ax.yaxis.set_major_formatter(lambda value, _: "10" + str(round(np.log10(value))).translate(SUPERSCRIPT))


def draw_complexity(result, inches: tuple[float, float]) -> Figure:
    """result: a ComplexityResult (app.visuals.kinds.complexity)."""
    narrow = inches[0] == NARROW_WIDTH
    figure = new_figure(*inches, layout=None)
    shape = (2, 1) if narrow else (1, 2)  # stacked on a phone
    entries = 5 + (result.predicted is not None and result.predicted > 0)  # the student's count: one more
    legend_height = 0.2 + (entries if narrow else 2) * 0.19  # the legend's rows, under the axes
    fixed_grid(figure, rows=shape[0], cols=shape[1], left=0.62 if narrow else 0.72, right=0.12,
               bottom=0.5 + legend_height, top=0.28, row_gap=0.85, col_gap=0.85)
    count_ax, ratio_ax = figure.subplots(*shape)
    x, sweep, own = result.vary, result.sweep, result.sizes[result.vary]
    fontsize = 8 if narrow else 9

    # (a) The exact count as a grey band, each option on top of it.
    exact_line, = count_ax.loglog(sweep, result.exact, color=EXACT_COLOUR, linewidth=7, solid_capstyle="butt",
                                  label="exact count (attention_flops)", gid="exact")
    handles = [exact_line]
    for index, curve in enumerate(result.curves):
        chosen = curve.option.id == result.choice
        style = {"color": OPTION_COLOURS[index], "linewidth": 3.0 if chosen else 1.8,
                 "linestyle": (index * DASH_ON, (DASH_ON, DASH_PERIOD - DASH_ON)), "dash_capstyle": "butt"}
        count_ax.loglog(sweep, curve.normalised, gid=curve.option.id, **style)
        ratio_ax.loglog(sweep, curve.ratios, gid=curve.option.id, **style)
        # The legend's swatch: the option's colour in short dashes, whatever its phase on the plot.
        label = curve.option.text + (" ✓" if curve.option.id == CORRECT else "") + (" (your answer)" if chosen else "")
        handles.append(Line2D([], [], color=style["color"], linewidth=style["linewidth"], linestyle=(0, (3.0, 1.5)),
                              label=label))

    # The student's point on the exact count, its number in the empty upper left with an arrow.
    own_count = result.exact[int(np.flatnonzero(sweep == own)[0])]
    count_ax.plot([own], [own_count], "o", color="black", markersize=4, zorder=5)
    count_ax.annotate(f"{result.total:,}\nat {x} = {own}", xy=(own, own_count), xytext=(0.04, 0.96),
                      textcoords="axes fraction", ha="left", va="top", fontsize=fontsize,
                      arrowprops={"arrowstyle": "-|>", "color": "black", "linewidth": 0.8, "shrinkA": 2,
                                  "shrinkB": 4})
    values = np.concatenate([result.exact, *(curve.normalised for curve in result.curves)])
    if entries == 6:  # the student's count at their own point, on the same axes (a count ≤ 0 has no place on them)
        mine, = count_ax.plot([own], [result.predicted], "D", color=PREDICTED_STYLE["edgecolor"], markersize=6,
                              markeredgecolor="white", zorder=6, gid="your-count",
                              label=f"your answer: {result.predicted:,.12g}")
        handles.append(mine)
        values = np.append(values, result.predicted)
    log_y(count_ax, float(values.min()), float(values.max()))
    count_ax.set_ylabel("multiply-adds")
    count_ax.set_title(f"(a) Count against {x}, scaled at {x} = 1", fontsize=10)

    # (b) Option ÷ exact count: 1 for an option that grows like the count, under a ceiling for one of the same
    # big-O but another constant factor, rising without bound for one of a higher power.
    ratio_ax.axvline(own, color="0.55", linestyle=":", linewidth=1.0, zorder=0)
    ratio_ax.axhline(1.0, color=EXACT_COLOUR, linewidth=7, zorder=0)
    high = max(float(max(curve.ratios.max() for curve in result.curves)), 4.0)
    ceiling = next((curve.ceiling for curve in result.curves if curve.levels_off), None)
    if ceiling is not None:  # the bound those ratios tend to, with room above it for its label and the note
        ratio_ax.axhline(float(ceiling), color="black", linestyle=":", linewidth=1.2, zorder=1, gid="ceiling")
        # Above the line, where the bounded curves never go, and narrow: a steep curve crosses the line at
        # x² = x + (d or l), x ≤ 16.5, left of the label.
        ratio_ax.annotate(f"ceiling\n{ceiling_text(result)}", xy=(sweep[-1], float(ceiling)), xytext=(0, 2),
                          textcoords="offset points", ha="right", va="bottom", fontsize=fontsize, gid="ceiling-label")
        high = max(high, 10.0 * float(ceiling))
    log_y(ratio_ax, 1.0, high)
    ratio_ax.set_ylabel("ratio (bounded = same big-O)")
    chosen = next((curve for curve in result.curves if curve.option.id == result.choice), None)
    if chosen is not None and chosen.ceiling is not None and chosen.option.id != CORRECT:  # this sweep hides it
        where = "lies on 1" if chosen.follows else "is bounded"
        ratio_ax.text(0.04, 0.96, f"your answer {chosen.option.text} {where}:\nthe same big-O in {x}; "
                      f"vary {' or '.join(result.separating[chosen.option.id])}", transform=ratio_ax.transAxes,
                      ha="left", va="top", fontsize=fontsize, fontweight="bold", gid="hidden-by-sweep")
    ratio_ax.set_title("(b) Each formula ÷ exact count", fontsize=10)

    # Plain-number ticks at powers of 4 (up to 256) or 8 (up to 2048), and the end.
    largest = int(sweep[-1])
    base = 4 if largest <= 256 else 8
    ticks = [base**e for e in range(8) if base**e <= largest]
    ticks = [*ticks, largest] if largest / ticks[-1] >= 3 else [*ticks[:-1], largest]
    for ax in (count_ax, ratio_ax):
        ax.set_xlim(sweep[0] / 1.15, sweep[-1] * 1.15)
        ax.set_xticks(ticks, labels=[str(tick) for tick in ticks])
        ax.minorticks_off()
        ax.set_xlabel(f"{x}   ({sizes_text(result.sizes, x)})", fontsize=fontsize + 1)
        ax.tick_params(labelsize=fontsize)

    if not narrow:  # three columns filled column by column: this order reads row by row
        handles = [handles[i] for i in (0, 3, 1, 4, 2, 5)[:len(handles)]]
    legend = figure.legend(handles=handles, loc="lower center", ncols=1 if narrow else 3, fontsize=fontsize,
                           frameon=False, bbox_to_anchor=(0.5, 0.02), handlelength=3.2)
    for text, handle in zip(legend.get_texts(), handles):
        if "your answer" in handle.get_label():
            text.set_fontweight("bold")
    return figure
