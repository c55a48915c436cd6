"""Plot for the "autoregressive-pixels" visual.

Two columns, Image GPT (full causal) and the Image Transformer (local 1-D blocks): the chosen pixel's
mask row laid out on the image, and the whole (H·W) × (H·W) mask, rows query pixels and columns key
pixels. Then the generation order: small panels of the image when pixel k is predicted (known and read,
known but outside the local memory, being predicted, not generated yet). On the wide image the steps
stand in a column on the right; on the phone's they sit two by two below the masks.
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, PathPatch, Rectangle
from matplotlib.path import Path
from matplotlib.ticker import MaxNLocator
from matplotlib.transforms import Affine2D

from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.autoregressive_pixels import (
    ATTENDED, EARLIER_MASKED, LATER, PREDICTED, QUERY, TEXT_SIZE, TITLE_SIZE, figure_layout, span,
)

from .figure import SEQUENTIAL, cell_labels, new_figure

_VIRIDIS = matplotlib.colormaps[SEQUENTIAL]
COLOURS = {
    LATER: (1.0, 1.0, 1.0, 1.0),  # blank: later in the order, masked; not generated yet
    EARLIER_MASKED: (0.66, 0.66, 0.66, 1.0),  # earlier, but outside the local memory: masked (hatched)
    ATTENDED: _VIRIDIS(0.72),  # earlier pixels (and itself) the query may attend to
    QUERY: _VIRIDIS(0.05),  # the query pixel itself
    PREDICTED: _VIRIDIS(0.98),  # the pixel being sampled at this step ("?")
}
PALETTE = ListedColormap([COLOURS[state] for state in sorted(COLOURS)])
HIGHLIGHT_COLOUR = "#d62728"  # outline of the query pixel, its mask row and the predicted pixel
BOUNDARY_COLOUR = "black"
HATCH = "///"
HATCH_COLOUR = "0.48"
MIN_NUMBERED_CELL = 0.075  # inches per digit (8 pt) plus a margin: below it, cells are not numbered


def draw_autoregressive_pixels(result, inches: tuple[float, float]) -> Figure:
    narrow = inches[0] == NARROW_WIDTH
    layout = figure_layout(result.height, result.width, result.choice, narrow)
    figure = new_figure(*layout.inches, layout=None)
    fig_w, fig_h = layout.inches

    def axes(name):
        box = layout.panels[name]
        return figure.add_axes((box.left / fig_w, 1 - (box.top + box.height) / fig_h, box.width / fig_w,
                                box.height / fig_h))

    figure.text(0.08 / fig_w, 1 - 0.08 / fig_h, "\n".join(layout.banner), ha="left", va="top",
                fontsize=layout.banner_size, fontweight="bold" if result.choice else "normal",
                linespacing=1.2)

    i, n = result.index, result.pixels
    one_block = result.one_block
    if narrow:
        titles = (f"(a) Image GPT\nfull causal\n#{i} attends {span(0, i)}",
                  f"(b) Image Transformer\nlocal blocks, b = {result.block}\n#{i} attends "
                  f"{span(result.memory_start, i)}")
    else:
        titles = (f"(a) Image GPT: full causal\npixel #{i} attends to {span(0, i)}",
                  f"(b) Image Transformer: local blocks\nb = {result.block}: #{i} attends to "
                  f"{span(result.memory_start, i)}")
    for name, state, title in (("causal_overlay", result.causal_state, titles[0]),
                               ("local_overlay", result.local_state, titles[1])):
        ax = axes(name)
        _overlay(ax, result, state, layout.cell)
        ax.set_title(title, fontsize=TEXT_SIZE if narrow else TITLE_SIZE)
    _block_boundaries(figure.axes[-1], result)

    window = "one block: same as (c)" if one_block else f"b = {result.block}"
    if narrow:
        mask_titles = (f"(c) causal_mask({n})\nrows: query pixels\ncolumns: key pixels",
                       f"(d) causal_mask\nAND block window\n{window}")
    else:
        mask_titles = (f"(c) causal_mask({n})\nrows: query, columns: key",
                       f"(d) causal_mask AND block window\n{window}")
    for name, mask, title in (("causal_mask", result.causal, mask_titles[0]),
                              ("local_mask", result.local, mask_titles[1])):
        ax = axes(name)
        _mask(ax, result, mask, narrow)
        ax.set_title(title, fontsize=TEXT_SIZE if narrow else TITLE_SIZE)

    which = "full causal mask" if result.mask_name == "causal" else f"local mask, b = {result.block}"
    header = (f"Generation order ({which})" if narrow
              else f"Generation order\n({which})")
    figure.text(layout.steps_header_left / fig_w, 1 - layout.steps_header_top / fig_h, header, ha="left",
                va="top", fontsize=TITLE_SIZE, linespacing=1.2)
    for slot in range(4):
        if slot < len(result.steps):
            _step(axes(f"step{slot}"), result, result.steps[slot], layout.step_cell)

    # A key to what this figure draws: the grey pixels and the memory's frame only where they appear.
    masked_somewhere = bool((result.local_state == EARLIER_MASKED).any()
                            or any((step.state == EARLIER_MASKED).any() for step in result.steps)
                            or (result.causal & ~result.local).any())
    first, _ = result.query_block
    handles = [
        Patch(facecolor=COLOURS[QUERY], edgecolor=HIGHLIGHT_COLOUR, linewidth=1.6,
              label=f"query pixel #{i} (its mask row framed)"),
        Patch(facecolor=COLOURS[ATTENDED], edgecolor="0.5", label="attended / read: earlier or itself"),
        *([Patch(facecolor=COLOURS[EARLIER_MASKED], edgecolor=HATCH_COLOUR, hatch=HATCH,
                 label="earlier, outside the local memory")] if masked_somewhere else []),
        Patch(facecolor=COLOURS[LATER], edgecolor="0.5", label="later: masked, not generated yet"),
        Patch(facecolor=COLOURS[PREDICTED], edgecolor=HIGHLIGHT_COLOUR, linewidth=1.6,
              label="being predicted (?)"),
        *([Line2D([], [], color=BOUNDARY_COLOUR, linewidth=1.8, label="(b): the query's local memory")]
          if not one_block else []),
        *([Line2D([], [], color=BOUNDARY_COLOUR, linewidth=1.2, linestyle=(0, (2, 1.5)),
                  label="(b): where its query block starts")] if first > result.memory_start else []),
    ]
    figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, layout.legend_bottom / fig_h),
                  ncol=1 if narrow else 3, fontsize=TEXT_SIZE, frameon=False, handlelength=1.4,
                  columnspacing=1.0, borderaxespad=0.0, borderpad=0.1)
    return figure


def _grid_lines(ax, height: int, width: int) -> None:
    """Lines between pixels, so that blank pixels show as cells: one collection of segments."""
    edges_x, edges_y = np.arange(-0.5, width, 1), np.arange(-0.5, height, 1)
    ax.add_collection(LineCollection(
        [((x, -0.5), (x, height - 0.5)) for x in edges_x] + [((-0.5, y), (width - 0.5, y)) for y in edges_y],
        colors="0.6", linewidths=0.5, zorder=1.5), autolim=False)


def _hatch(ax, state: np.ndarray) -> None:
    """Hatch the earlier-but-masked pixels: grey is not told apart by colour alone."""
    rows, cols = np.nonzero(state == EARLIER_MASKED)
    if not rows.size:
        return
    squares = [Path.unit_rectangle().transformed(_shift(c - 0.5, r - 0.5)) for r, c in zip(rows, cols)]
    ax.add_patch(PathPatch(Path.make_compound_path(*squares), facecolor="none", edgecolor=HATCH_COLOUR,
                           hatch=HATCH, linewidth=0, zorder=1.4))


def _shift(x: float, y: float) -> Affine2D:
    return Affine2D().translate(x, y)


def _image_axes(ax, state: np.ndarray) -> None:
    ax.imshow(state, cmap=PALETTE, vmin=0, vmax=len(COLOURS) - 1, interpolation="nearest", aspect="auto")
    height, width = state.shape
    ax.set_xlim(-0.5, width - 0.5)
    ax.set_ylim(height - 0.5, -0.5)


def _tick_step(cell: float) -> int:
    return next(step for step in (1, 2, 3, 5, 8) if step * cell >= 0.2)


def _overlay(ax, result, state: np.ndarray, cell: float) -> None:
    height, width = result.height, result.width
    _image_axes(ax, state)
    _grid_lines(ax, height, width)
    _hatch(ax, state)
    ax.add_patch(Rectangle((result.col - 0.5, result.row - 0.5), 1, 1, fill=False,
                           edgecolor=HIGHLIGHT_COLOUR, linewidth=2.0, zorder=4))
    ax.set_xticks(range(0, width, _tick_step(cell)))
    ax.set_yticks(range(0, height, _tick_step(cell)))
    ax.tick_params(labelsize=TEXT_SIZE, length=2.5, pad=1.5)
    ax.set_xlabel("column", fontsize=TEXT_SIZE, labelpad=1)
    ax.set_ylabel("row", fontsize=TEXT_SIZE, labelpad=1)
    digits = len(str(result.pixels - 1))
    if cell >= digits * MIN_NUMBERED_CELL:
        rows, cols = np.indices(state.shape)
        fills = [COLOURS[value] for value in state.ravel()]
        luminance = [0.2126 * f[0] + 0.7152 * f[1] + 0.0722 * f[2] for f in fills]
        cell_labels(ax, cols.ravel(), rows.ravel(), [str(v) for v in result.raster_index.ravel()],
                    ["black" if value > 0.5 else "white" for value in luminance], fontsize=TEXT_SIZE)


def _raster_boundary(position: int, width: int, height: int) -> list:
    """Segments between pixels before `position` in raster order and pixels from it on."""
    row, col = divmod(position, width)
    segments = []
    if row > 0:
        segments.append(((col - 0.5, row - 0.5), (width - 0.5, row - 0.5)))  # above the rest of its row
    if col > 0:
        segments.append(((col - 0.5, row - 0.5), (col - 0.5, row + 0.5)))  # left of it
        if row + 1 < height:
            segments.append(((-0.5, row + 0.5), (col - 0.5, row + 0.5)))  # below the start of its row
    return segments


def _block_boundaries(ax, result) -> None:
    """Frame the chosen pixel's local memory (the block before its query block, and its query block)."""
    if result.one_block:
        return
    first, last = result.query_block
    cuts = [position for position in (result.memory_start, last + 1) if 0 < position < result.pixels]
    segments = [segment for position in cuts for segment in _raster_boundary(position, result.width, result.height)]
    if segments:
        ax.add_collection(LineCollection(segments, colors=BOUNDARY_COLOUR, linewidths=1.8, zorder=3.5),
                          autolim=False)
    if first > result.memory_start:  # the memory holds a block before the query block: mark where they meet
        ax.add_collection(LineCollection(_raster_boundary(first, result.width, result.height),
                                         colors=BOUNDARY_COLOUR, linewidths=1.2, linestyles=(0, (2, 1.5)),
                                         zorder=3.5), autolim=False)


def _mask(ax, result, mask: np.ndarray, narrow: bool) -> None:
    n, i = result.pixels, result.index
    # 2 = may attend, 1 = earlier but outside the local window, 0 = later (the causal mask's zeros).
    state = np.where(mask, ATTENDED, np.where(result.causal, EARLIER_MASKED, LATER))
    ax.imshow(state, cmap=PALETTE, vmin=0, vmax=len(COLOURS) - 1, interpolation="nearest", aspect="auto")
    blocks = -(-n // result.block)
    if mask is result.local and 1 < blocks <= 16:
        cuts = np.arange(result.block, n, result.block) - 0.5
        ax.add_collection(LineCollection(
            [((c, -0.5), (c, n - 0.5)) for c in cuts] + [((-0.5, c), (n - 0.5, c)) for c in cuts],
            colors="0.35", linewidths=0.5, linestyles=(0, (2, 2)), zorder=2), autolim=False)
    ax.add_patch(Rectangle((-0.5, i - 0.5), n, 1, fill=False, edgecolor=HIGHLIGHT_COLOUR, linewidth=1.4,
                           zorder=3))
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    bins = 4 if narrow else 6
    ax.xaxis.set_major_locator(MaxNLocator(nbins=bins, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=bins, integer=True))
    ax.tick_params(labelsize=TEXT_SIZE, length=2.5, pad=1.5)
    ax.set_xlabel("key pixel", fontsize=TEXT_SIZE, labelpad=1)
    ax.set_ylabel("query pixel", fontsize=TEXT_SIZE, labelpad=1)


def _step(ax, result, step, cell: float) -> None:
    k = step.predicted
    _image_axes(ax, step.state)
    if cell >= 0.06:
        _grid_lines(ax, result.height, result.width)
    _hatch(ax, step.state)
    row, col = divmod(k, result.width)
    ax.add_patch(Rectangle((col - 0.5, row - 0.5), 1, 1, fill=False, edgecolor=HIGHLIGHT_COLOUR,
                           linewidth=1.6, zorder=4))
    if cell >= 0.1:
        cell_labels(ax, [col], [row], ["?"], ["black"], fontsize=TEXT_SIZE)
    # No ticks: the axes off (its tick machinery is most of a small panel's cost), a frame drawn instead.
    ax.set_axis_off()
    ax.add_patch(Rectangle((-0.5, -0.5), result.width, result.height, fill=False, edgecolor="black",
                           linewidth=0.8, zorder=5, clip_on=False))
    if k == 0:
        lines = ("predict #0", "nothing known yet", "(no noise input)")
    else:
        first, last = step.read
        lines = (f"predict #{k}", f"known {span(0, k - 1)}", f"reads {span(first, last)}")
    ax.set_title("\n".join(lines), fontsize=TEXT_SIZE, linespacing=1.1, pad=3)
