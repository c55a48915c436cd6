"""Plot for the "autoregressive-pixels" visual: the image with raster indices and what one pixel may
attend to, and the full causal mask over pixels with that pixel's row highlighted.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from .describe import autoregressive_pixels_alt
from .figure import SEQUENTIAL, cell_labels, new_figure
from .sizes import AUTOREGRESSIVE_PIXELS_INCHES

_VIRIDIS = matplotlib.colormaps[SEQUENTIAL]
FUTURE_COLOUR = (1.0, 1.0, 1.0, 1.0)  # blank: not generated yet, masked out
ALLOWED_COLOUR = _VIRIDIS(0.72)  # earlier pixels the chosen one may attend to
CHOSEN_COLOUR = _VIRIDIS(0.05)  # the query pixel itself
MAX_FULLY_NUMBERED_WIDTH = 10
HIGHLIGHT_COLOUR = "#d62728"  # outline of the chosen query row; shape, not colour alone, carries it


def _text_colour(fill) -> str:
    luminance = 0.2126 * fill[0] + 0.7152 * fill[1] + 0.0722 * fill[2]
    return "black" if luminance > 0.5 else "white"


def draw_autoregressive_pixels(result) -> tuple[Figure, str]:
    height, width, index = result.height, result.width, result.index
    pixels = height * width

    figure = new_figure(*AUTOREGRESSIVE_PIXELS_INCHES, layout="grid")
    grid_ax, mask_ax = figure.subplots(1, 2)

    # (a) 0 = future (masked), 1 = may attend, 2 = the chosen pixel.
    state = result.allowed.astype(int)
    state[result.row, result.col] = 2
    palette = (FUTURE_COLOUR, ALLOWED_COLOUR, CHOSEN_COLOUR)
    grid_ax.imshow(state, cmap=ListedColormap(palette), vmin=0, vmax=2, interpolation="nearest")
    # Grid lines between pixels make the blank future pixels visible as cells: one collection of
    # segments (what minor-tick grid lines draw, without a tick object per line).
    edges_x, edges_y = np.arange(-0.5, width, 1), np.arange(-0.5, height, 1)
    grid_ax.add_collection(LineCollection(
        [((x, -0.5), (x, height - 0.5)) for x in edges_x] + [((-0.5, y), (width - 0.5, y)) for y in edges_y],
        colors="0.6", linewidths=0.6, zorder=1.5), autolim=False)  # where grid lines sit
    grid_ax.set_xticks(range(0, width, 1 if width <= MAX_FULLY_NUMBERED_WIDTH else 3))
    grid_ax.set_yticks(range(0, height, 1 if height <= MAX_FULLY_NUMBERED_WIDTH else 3))
    grid_ax.add_patch(Rectangle((result.col - 0.5, result.row - 0.5), 1, 1, fill=False,
                                edgecolor=HIGHLIGHT_COLOUR, linewidth=2.0))
    # Wide images have cells too small for three digits at 8 pt: number the first pixel of each
    # row (the raster order still reads off) and the chosen pixel.
    numbered = [(r, c) for r in range(height) for c in range(width)
                if width <= MAX_FULLY_NUMBERED_WIDTH or c == 0 or (r, c) == (result.row, result.col)]
    cell_labels(grid_ax, [c for _, c in numbered], [r for r, _ in numbered],
                [str(result.raster_index[r, c]) for r, c in numbered],
                [_text_colour(palette[state[r, c]]) for r, c in numbered], fontsize=8)
    grid_ax.set_xlabel("column")
    grid_ax.set_ylabel("row")
    grid_ax.set_title(f"(a) Pixel ({result.row}, {result.col}) = #{index} in raster order", fontsize=10)

    # (b) The whole causal mask: rows are query pixels, columns key pixels.
    mask_ax.imshow(result.mask.astype(int), cmap=ListedColormap((FUTURE_COLOUR, ALLOWED_COLOUR)), vmin=0,
                   vmax=1, interpolation="nearest")
    mask_ax.add_patch(Rectangle((-0.5, index - 0.5), pixels, 1, fill=False, edgecolor=HIGHLIGHT_COLOUR,
                                linewidth=1.6))
    mask_ax.add_patch(Rectangle((-0.5, -0.5), pixels, pixels, fill=False, edgecolor="0.4", linewidth=0.8))
    locator = MaxNLocator(nbins=8, integer=True)
    mask_ax.xaxis.set_major_locator(locator)
    mask_ax.yaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    mask_ax.set_xlim(-0.5, pixels - 0.5)
    mask_ax.set_ylim(pixels - 0.5, -0.5)
    mask_ax.set_xlabel("key pixel (raster index)")
    mask_ax.set_ylabel("query pixel (raster index)")
    mask_ax.set_title(f"(b) Causal mask over {pixels} pixels", fontsize=10)
    figure.legend(
        handles=[Patch(facecolor=CHOSEN_COLOUR, edgecolor=HIGHLIGHT_COLOUR, linewidth=1.6,
                       label=f"query pixel #{index}"),
                 Patch(facecolor=ALLOWED_COLOUR, edgecolor="0.5", label="may attend (earlier, and itself)"),
                 Patch(facecolor=FUTURE_COLOUR, edgecolor="0.5", label="future: masked"),
                 Patch(facecolor="none", edgecolor=HIGHLIGHT_COLOUR, linewidth=1.6,
                       label=f"mask row of query #{index}")],
        loc="outside lower center", ncol=4, fontsize=8, frameon=False, handlelength=1.4,
        columnspacing=1.2,
    )

    return figure, autoregressive_pixels_alt(result)
