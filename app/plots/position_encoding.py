"""Plot for the "position-encoding" visual: the PE matrix, a few of its waves, the shift-invariant dot
product, and each position's distance to its nearest neighbour, with positions beyond training shaded.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from .describe import format_small, position_encoding_alt
from .figure import DIVERGING, SEQUENTIAL, new_figure
from .sizes import POSITION_ENCODING_INCHES

BEYOND_SHADE = "0.85"


def _wave_label(dimension: int) -> str:
    # The engine's interleaved layout: even columns are sines, odd columns cosines.
    return f"{dimension} {'sin' if dimension % 2 == 0 else 'cos'}"


def draw_position_encoding(result) -> tuple[Figure, str]:
    encoding = result.encoding
    length = encoding.shape[0]
    train_length = result.train_length
    colours = matplotlib.colormaps[SEQUENTIAL]

    figure = new_figure(*POSITION_ENCODING_INCHES, layout="grid")
    (heat_ax, wave_ax), (dot_ax, unique_ax) = figure.subplots(2, 2)

    # (a) sin/cos values lie in [-1, 1]: that true range, centred on zero, fixes the diverging map.
    image = heat_ax.imshow(encoding, cmap=DIVERGING, vmin=-1.0, vmax=1.0, aspect="auto",
                           interpolation="nearest")
    heat_ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    heat_ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    heat_ax.set_xlabel("dimension")
    heat_ax.set_ylabel("position p")
    heat_ax.set_title("(a) PE matrix")
    colourbar = figure.colorbar(image, ax=heat_ax, fraction=0.08, pad=0.02)
    colourbar.ax.tick_params(labelsize=8)

    # (b) Low dimensions oscillate fast, high ones slowly: together they act like a binary counter.
    positions = np.arange(length)
    shades = np.linspace(0.0, 0.85, len(result.wave_dimensions))
    for dimension, shade in zip(result.wave_dimensions, shades):
        wave_ax.plot(positions, encoding[:, dimension], color=colours(shade), linewidth=1.2,
                     label=_wave_label(dimension))
    wave_ax.set_xlabel("position p")
    wave_ax.set_ylabel("PE value")
    wave_ax.set_ylim(-1.1, 1.95)  # headroom for the legend above the waves
    wave_ax.set_yticks([-1, -0.5, 0, 0.5, 1])
    wave_ax.set_title("(b) Some dimensions")
    wave_ax.legend(fontsize=8, loc="upper center", ncol=len(result.wave_dimensions), title="dimension",
                   title_fontsize=8, handlelength=1.2, columnspacing=0.8, handletextpad=0.4,
                   borderaxespad=0.2)

    # (c) The curves for different p lie on top of each other: PE(p)·PE(p+k) depends only on k.
    styles = ("-", "--", ":")
    widths = (3.0, 1.8, 1.4)
    for index, start in enumerate(result.start_positions):
        dot_ax.plot(result.offsets, result.dot_products[index], color=colours(0.15 + 0.35 * index),
                    linestyle=styles[index], linewidth=widths[index], label=f"p = {start}")
    dot_ax.set_xlabel("offset k")
    dot_ax.set_ylabel("PE(p)·PE(p+k)")
    dot_ax.set_title("(c) Depends only on the offset k")
    dot_ax.legend(fontsize=8, loc="upper right", title="start", title_fontsize=8)
    dot_ax.text(0.03, 0.04, f"max spread between curves: {format_small(result.max_spread)}",
                transform=dot_ax.transAxes, fontsize=8, va="bottom",
                bbox={"facecolor": "white", "edgecolor": "0.7", "boxstyle": "round,pad=0.2"})

    # (d) Every position, including those beyond the training length, keeps a distinct encoding.
    if train_length < length:
        unique_ax.axvspan(train_length - 0.5, length - 0.5, color=BEYOND_SHADE, zorder=0,
                          label="beyond training length")
    unique_ax.plot(positions, result.nearest_distance, color=colours(0.3), linewidth=2.0,
                   label="distance to nearest other position")
    unique_ax.axhline(result.min_distance, color="black", linestyle=":", linewidth=1.0,
                      label=f"minimum {format_small(result.min_distance)}")
    unique_ax.set_xlim(-0.5, length - 0.5)
    # Zero (a collision) stays on the axis; the headroom keeps the legend clear of the curve.
    unique_ax.set_ylim(0, max(float(result.nearest_distance.max()) * 1.7, 1e-12))
    unique_ax.set_xlabel("position p")
    unique_ax.set_ylabel("min over q≠p of ‖PE(p)−PE(q)‖")
    unique_ax.set_title("(d) Every position is unique")
    unique_ax.legend(fontsize=8, loc="upper right")

    return figure, position_encoding_alt(result)
