"""Plot for the "complexity" visual: the multiply-add count N·M·(d + l) against N, and measured wall
times on a log-log plot with their fitted slope and a slope-2 reference. Deterministic given its input.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

from .figure import SEQUENTIAL, new_figure
from .sizes import COMPLEXITY_INCHES

_VIRIDIS = matplotlib.colormaps[SEQUENTIAL]
TOTAL_COLOUR = _VIRIDIS(0.05)
SCORES_COLOUR = _VIRIDIS(0.45)
VALUES_COLOUR = _VIRIDIS(0.75)


def format_slope(slope: float) -> str:
    return f"{slope:.1f}"


def _size_axis(ax, sizes: np.ndarray) -> None:
    """Plain-number ticks at powers of two (and the ends) instead of crowded 2×10¹ labels."""
    smallest, largest = int(sizes[0]), int(sizes[-1])
    powers = [2**e for e in range(1, 12) if smallest <= 2**e <= largest]
    ticks = sorted({smallest, largest, *powers})
    # Keep ticks at least a factor 1.8 apart so their labels do not collide.
    spaced = [ticks[0]]
    for tick in ticks[1:]:
        if tick / spaced[-1] >= 1.8:
            spaced.append(tick)
    if spaced[-1] != largest:
        spaced[-1] = largest
    ax.xaxis.set_major_locator(FixedLocator(spaced))
    ax.set_xticklabels([str(t) for t in spaced])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def draw_complexity(result) -> tuple[Figure, str]:
    figure = new_figure(*COMPLEXITY_INCHES, layout="grid")
    count_ax, time_ax = figure.subplots(1, 2)
    d, l, max_n = result.d, result.l, result.max_n

    # (a) Exact counts. When d = l the two parts coincide, so they differ in line style too.
    count_ax.loglog(result.counted_n, result.total_multiply_adds, color=TOTAL_COLOUR, linewidth=2.2,
                    label="total N·M·(d+l)")
    count_ax.loglog(result.counted_n, result.value_multiply_adds, color=VALUES_COLOUR, linewidth=4.0,
                    label=f"weights·V: N·M·{l}")
    count_ax.loglog(result.counted_n, result.score_multiply_adds, color=SCORES_COLOUR, linewidth=1.6,
                    linestyle="--", label=f"Q Kᵀ: N·M·{d}")
    count_ax.plot([max_n], [result.total_at_max], "o", color="black", markersize=4)
    # The counts rise from lower left to upper right, so the upper left and lower right stay empty: the
    # number goes in the one, with an arrow to its point, and the legend in the other.
    count_ax.annotate(f"{result.total_at_max:,}\nat N = M = {max_n}", xy=(max_n, result.total_at_max),
                      xytext=(0.04, 0.96), textcoords="axes fraction", ha="left", va="top", fontsize=8,
                      arrowprops={"arrowstyle": "-|>", "color": "black", "linewidth": 0.8, "shrinkA": 2,
                                  "shrinkB": 4})
    _size_axis(count_ax, result.counted_n)
    count_ax.set_xlabel("N = M (queries = keys)")
    count_ax.set_ylabel("multiply-adds")
    count_ax.set_title(f"(a) Operation count, d = {d}, l = {l}", fontsize=10)
    count_ax.legend(fontsize=8, loc="lower right")

    # (b) Measured times; the reference line has slope 2 through the largest measurement.
    n, seconds = result.timed_n, result.seconds
    milliseconds = seconds * 1e3
    time_ax.loglog(n, milliseconds, "o-", color=TOTAL_COLOUR, linewidth=1.4, markersize=4,
                   label=f"measured (fitted slope {format_slope(result.slope)})")
    fitted = n[len(n) // 2:]
    time_ax.plot(fitted, milliseconds[len(n) // 2:], "o", color=TOTAL_COLOUR, markersize=7, fillstyle="none",
                 label="circled: used for the fit")
    reference = milliseconds[-1] * (n / n[-1]) ** 2
    time_ax.loglog(n, reference, color="0.45", linestyle="--", linewidth=1.2, label="slope 2 (O(N²))")
    _size_axis(time_ax, n)
    time_ax.set_xlabel("N = M (queries = keys)")
    time_ax.set_ylabel("wall time (ms)")
    time_ax.set_title("(b) Wall time measured on this server", fontsize=10)
    # The measured curve can run along the top (flat at small N): "best" keeps the legend off the lines.
    time_ax.legend(fontsize=8, loc="best")

    alt = (
        f"Two log-log plots against N = M. At N = M = {max_n} with d = {d}, l = {l}: "
        f"{max_n}·{max_n}·({d}+{l}) = {result.total_at_max:,} multiply-adds "
        f"(Q Kᵀ {int(result.score_multiply_adds[-1]):,}, "
        f"weights·V {int(result.value_multiply_adds[-1]):,}). "
        f"Measured time of the engine's attention at N = {int(n[0])} to {int(n[-1])} grows with fitted "
        f"slope {format_slope(result.slope)} on a log-log plot, against slope 2 for O(N²) when M = N "
        f"({milliseconds[-1]:.3g} ms at N = {int(n[-1])})."
    )
    return figure, alt
