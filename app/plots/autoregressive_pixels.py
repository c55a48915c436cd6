"""Plot for the "autoregressive-pixels" visual: Image GPT's and the Image Transformer's mask, each as the chosen
pixel's row laid out on the image and as the whole (H·W) × (H·W) mask (rows query pixels, columns key pixels);
then the generation order, small panels of the image when pixel k is predicted."""

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

from app.visuals.base import NARROW_WIDTH
from app.visuals.kinds.autoregressive_pixels import (
    ATTENDED, EARLIER_MASKED, EDGE, LATER, PREDICTED, QUERY, TEXT_SIZE, TITLE_SIZE, figure_layout, pixel_states,
    span,
)

from .figure import SEQUENTIAL, cell_labels, cells, contrasting_colours, new_figure

# A pixel's colour, indexed by its state.
COLOURS = ((1.0, 1.0, 1.0, 1.0),  # LATER: blank, masked; not generated yet
           (0.66, 0.66, 0.66, 1.0),  # EARLIER_MASKED: earlier, but outside the local memory (hatched too)
           *matplotlib.colormaps[SEQUENTIAL]([0.72, 0.05, 0.98]))  # ATTENDED, QUERY, PREDICTED ("?")
PALETTE = ListedColormap(COLOURS)
HIGHLIGHT = "#d62728"  # outline of the query pixel, its mask row and the predicted pixel
HATCH, HATCH_COLOUR = "///", "0.48"
MIN_NUMBERED_CELL = 0.075  # inches per digit (8 pt) plus a margin: below it, cells are not numbered


def draw_autoregressive_pixels(result, inches: tuple[float, float]) -> Figure:
    narrow = inches[0] == NARROW_WIDTH
    layout = figure_layout(result.height, result.width, result.choice, narrow)
    figure = new_figure(*layout.inches, layout=None)
    fig_w, fig_h = layout.inches
    size = TEXT_SIZE if narrow else TITLE_SIZE

    def axes(left, top, width, height, title=""):  # inches from the figure's top left corner
        ax = figure.add_axes((left / fig_w, 1 - (top + height) / fig_h, width / fig_w, height / fig_h))
        # y given: matplotlib then skips measuring every tick label to place the title (none sits on top).
        ax.set_title(title, fontsize=size, y=1.0)
        return ax

    figure.text(EDGE / fig_w, 1 - EDGE / fig_h, "\n".join(layout.banner), ha="left", va="top", fontsize=size,
                fontweight="bold" if result.choice else "normal", linespacing=1.2)
    i, n, b, memory = result.index, result.pixels, result.block, result.memory_start
    window = "one block: same as (c)" if result.one_block else f"b = {b}"
    titles = ((f"(a) Image GPT\nfull causal\n#{i} attends {span(0, i)}",
               f"(b) Image Transformer\nlocal blocks, b = {b}\n#{i} attends {span(memory, i)}",
               f"(c) causal_mask({n})\nrows: query pixels\ncolumns: key pixels",
               f"(d) causal_mask\nAND block window\n{window}") if narrow else
              (f"(a) Image GPT: full causal\npixel #{i} attends to {span(0, i)}",
               f"(b) Image Transformer: local blocks\nb = {b}: #{i} attends to {span(memory, i)}",
               f"(c) causal_mask({n})\nrows: query, columns: key", f"(d) causal_mask AND block window\n{window}"))
    masks = {"causal": result.causal, "local": result.local}
    overlay_cell = layout.panels["causal_overlay"][2] / result.width  # inches per pixel
    for (name, mask), title in zip(masks.items(), titles):
        state = pixel_states(mask[i], i, QUERY, (result.height, result.width))  # the chosen pixel's row of it
        _overlay(axes(*layout.panels[f"{name}_overlay"], title), result, state, overlay_cell)
    _block_boundaries(figure.axes[-1], result)
    for (name, mask), title in zip(masks.items(), titles[2:]):
        _mask(axes(*layout.panels[f"{name}_mask"], title), result, mask, narrow)

    which = "full causal mask" if result.mask_name == "causal" else f"local mask, b = {b}"
    figure.text(layout.header[0] / fig_w, 1 - layout.header[1] / fig_h,
                "Generation order" + (" " if narrow else "\n") + f"({which})", ha="left", va="top",
                fontsize=TITLE_SIZE, linespacing=1.2)
    # The step panels share one axes (four cost as much as the rest of the figure), its data unit one of their
    # pixels: a panel at (left, top) inches has its top left pixel's centre at (left / cell + ½, top / cell + ½).
    boxes = [layout.panels[f"step{slot}"] for slot in range(len(result.steps))]
    cell = boxes[0][2] / result.width  # inches per pixel
    left, top = min(box[0] for box in boxes), min(box[1] for box in boxes)
    right, bottom = max(box[0] + box[2] for box in boxes), max(box[1] + box[3] for box in boxes)
    ax = axes(left, top, right - left, bottom - top)
    ax.set_axis_off()  # no ticks: a frame round each panel instead
    ax.set_xlim(left / cell, right / cell)
    ax.set_ylim(bottom / cell, top / cell)
    for (x, y, _, _), step in zip(boxes, result.steps):
        x, y, k = x / cell + 0.5, y / cell + 0.5, step.predicted
        _pixels(ax, step.state, grid=cell >= 0.06, at=(x, y))
        row, col = divmod(k, result.width)
        if cell >= 0.1:
            cell_labels(ax, [x + col], [y + row], ["?"], ["black"], fontsize=TEXT_SIZE)
        ax.add_patch(Rectangle((x - 0.5, y - 0.5), result.width, result.height, fill=False, edgecolor="black",
                               linewidth=0.8, zorder=5, clip_on=False))
        ax.text(x + (result.width - 1) / 2, y - 0.5 - 3 / 72 / cell, "predict #0\nnothing known yet\n(no noise input)"
                if k == 0 else f"predict #{k}\nknown {span(0, k - 1)}\nreads {span(*step.read)}", ha="center",
                va="baseline", fontsize=TEXT_SIZE, linespacing=1.1)  # 3 pt above the panel

    # A key to what this figure draws: the grey pixels and the memory's frame only where they appear.
    masked_somewhere = bool((result.causal & ~result.local).any()
                            or any((step.state == EARLIER_MASKED).any() for step in result.steps))
    handles = [
        Patch(facecolor=COLOURS[QUERY], edgecolor=HIGHLIGHT, linewidth=1.6,
              label=f"query pixel #{i} (its mask row framed)"),
        Patch(facecolor=COLOURS[ATTENDED], edgecolor="0.5", label="attended / read: earlier or itself"),
        *([Patch(facecolor=COLOURS[EARLIER_MASKED], edgecolor=HATCH_COLOUR, hatch=HATCH,
                 label="earlier, outside one layer's local memory")] if masked_somewhere else []),
        Patch(facecolor=COLOURS[LATER], edgecolor="0.5", label="later: masked, not generated yet"),
        Patch(facecolor=COLOURS[PREDICTED], edgecolor=HIGHLIGHT, linewidth=1.6, label="being predicted (?)"),
        *([Line2D([], [], color="black", linewidth=1.8, label="(b): the query's local memory")]
          if not result.one_block else []),
        *([Line2D([], [], color="black", linewidth=1.2, linestyle=(0, (2, 1.5)),
                  label="(b): where its query block starts")] if result.query_block[0] > memory else []),
    ]
    figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, EDGE / fig_h),
                  ncol=1 if narrow else 3, fontsize=TEXT_SIZE, frameon=False, handlelength=1.4,
                  columnspacing=1.0, borderaxespad=0.0, borderpad=0.1)
    return figure


def _pixels(ax, state: np.ndarray, grid: bool = True, at: tuple[float, float] = (0, 0)) -> None:
    """The image's pixels coloured by state, its top left pixel's centre at data point `at`: lines between them
    (one collection) so that blank pixels show as cells, the earlier-but-masked ones hatched (grey is not told
    apart by colour alone), and the marked one (the query, or the pixel being predicted) framed."""
    (height, width), (x0, y0) = state.shape, (at[0] - 0.5, at[1] - 0.5)  # the image's top left corner
    cells(ax, state, cmap=PALETTE, vmin=0, vmax=len(COLOURS) - 1, extent=(x0, x0 + width, y0 + height, y0))
    if grid:
        ax.add_collection(LineCollection(
            [((x, y0), (x, y0 + height)) for x in x0 + np.arange(width + 1)]
            + [((x0, y), (x0 + width, y)) for y in y0 + np.arange(height + 1)],
            colors="0.6", linewidths=0.5, zorder=1.5), autolim=False)
    corners = [(0, 0), (1, 0), (1, 1), (0, 1)]
    squares = np.argwhere(state == EARLIER_MASKED)[:, np.newaxis, ::-1] + [x0, y0] + corners  # (pixels, 4, 2)
    if len(squares):
        ax.add_patch(PathPatch(Path.make_compound_path_from_polys(squares), facecolor="none",
                               edgecolor=HATCH_COLOUR, hatch=HATCH, linewidth=0, zorder=1.4))
    [(row, col)] = np.argwhere(state >= QUERY)  # QUERY on an overlay, PREDICTED on a step
    ax.add_patch(Rectangle((x0 + col, y0 + row), 1, 1, fill=False, edgecolor=HIGHLIGHT, zorder=4,
                           linewidth=2.0 if state[row, col] == QUERY else 1.6))


def _overlay(ax, result, state: np.ndarray, cell: float) -> None:
    _pixels(ax, state)
    ax.set_xlim(-0.5, result.width - 0.5)
    ax.set_ylim(result.height - 0.5, -0.5)
    step = next(step for step in (1, 2, 3, 5, 8) if step * cell >= 0.2)  # ticks at least 0.2 in apart
    ax.set_xticks(range(0, result.width, step))
    ax.set_yticks(range(0, result.height, step))
    ax.tick_params(labelsize=TEXT_SIZE, length=2.5, pad=1.5)
    ax.set_xlabel("column", fontsize=TEXT_SIZE, labelpad=1)
    ax.set_ylabel("row", fontsize=TEXT_SIZE, labelpad=1)
    if cell >= len(str(result.pixels - 1)) * MIN_NUMBERED_CELL:  # each pixel's number in raster order
        rows, cols = np.indices(state.shape)
        cell_labels(ax, cols.ravel(), rows.ravel(), [str(j) for j in range(result.pixels)],
                    contrasting_colours(PALETTE, state.ravel() / (len(COLOURS) - 1)), fontsize=TEXT_SIZE)


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
    (first, last), h, w = result.query_block, result.height, result.width
    cuts = [position for position in (result.memory_start, last + 1) if 0 < position < result.pixels]
    segments = [segment for position in cuts for segment in _raster_boundary(position, w, h)]
    if segments:
        ax.add_collection(LineCollection(segments, colors="black", linewidths=1.8, zorder=3.5), autolim=False)
    if first > result.memory_start:  # the memory holds a block before the query block: mark where they meet
        ax.add_collection(LineCollection(_raster_boundary(first, w, h), colors="black", linewidths=1.2,
                                         linestyles=(0, (2, 1.5)), zorder=3.5), autolim=False)


def _mask(ax, result, mask: np.ndarray, narrow: bool) -> None:
    n = result.pixels
    state = np.where(mask, ATTENDED, np.where(result.causal, EARLIER_MASKED, LATER))  # (query, key)
    cells(ax, state, cmap=PALETTE, vmin=0, vmax=len(COLOURS) - 1)
    if mask is result.local and 1 < -(-n // result.block) <= 16:  # dashed lines between (at most 16) blocks
        cuts = np.arange(result.block, n, result.block) - 0.5
        ax.add_collection(LineCollection(
            [((c, -0.5), (c, n - 0.5)) for c in cuts] + [((-0.5, c), (n - 0.5, c)) for c in cuts],
            colors="0.35", linewidths=0.5, linestyles=(0, (2, 2)), zorder=2), autolim=False)
    ax.add_patch(Rectangle((-0.5, result.index - 0.5), n, 1, fill=False, edgecolor=HIGHLIGHT, linewidth=1.4,
                           zorder=3))
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_ylim(n - 0.5, -0.5)
    ticks = MaxNLocator(nbins=4 if narrow else 6, integer=True).tick_values(-0.5, n - 0.5)
    ticks = ticks[(ticks >= 0) & (ticks < n)]  # only those in view: matplotlib makes six artists per tick
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.tick_params(labelsize=TEXT_SIZE, length=2.5, pad=1.5)
    ax.set_xlabel("key pixel", fontsize=TEXT_SIZE, labelpad=1)
    ax.set_ylabel("query pixel", fontsize=TEXT_SIZE, labelpad=1)
