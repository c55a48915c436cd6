"""A one-pass layout for the visuals' figures: grid cells sized from each label's measured extent.

matplotlib's constrained layout measures every decoration of every axes twice (and its tight-bbox
machinery a few times more per measurement). This engine measures each tick label, axis label and
title once, records where it sits relative to its axes, and then places the gridspec's cells with
arithmetic, so no label is clipped and none overlaps a neighbouring axes, for any parameters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine, LayoutEngine
from matplotlib.ticker import FixedLocator, NullLocator
from matplotlib.transforms import Bbox

EDGE_PAD = 4 / 72  # inches between the outermost labels and the figure's edge
CELL_PAD = 4 / 72  # inches around each cell's labels, so neighbours are 2 × CELL_PAD apart


@dataclass
class _Decoration:
    """A label's box relative to an anchor at fraction (fx, fy) of its axes box, in pixels."""

    fx: float
    fy: float
    x0: float
    x1: float
    y0: float
    y1: float


@dataclass
class _Measured:
    ax: object
    rows: range
    cols: range
    decorations: list[_Decoration] = field(default_factory=list)
    ticks: tuple = ()  # (location, label) of each axis's ticks when measured

    def extents(self, width: float, height: float) -> tuple[dict, float, float]:
        """How far the labels reach beyond an axes box of this size.

        Returns ({band: (left, right)}, bottom, top). Horizontally, labels only collide with a
        neighbour's labels at the same height, so the reach left and right is kept per band of
        the grid: ("top", row) above the axes (titles), ("side", row) beside it (tick labels, axis
        labels), ("bottom", row) below it (x tick labels). A title's overhang then shares the width
        with the next column's tick labels, which sit lower.
        """
        bands: dict = {}
        bottom = top = 0.0
        first, last = self.rows.start, self.rows.stop - 1
        for d in self.decorations:
            x, y = d.fx * width, d.fy * height
            left, right = -(x + d.x0), x + d.x1 - width
            low, high = y + d.y0, y + d.y1
            bottom, top = max(bottom, -low), max(top, high - height)
            touched = []
            if high > height:
                touched.append(("top", first))
            if low < 0:
                touched.append(("bottom", last))
            if high > 0 and low < height:  # beside the axes, and so beside every row it spans
                touched += [("side", row) for row in self.rows]
                touched += [("top", row) for row in self.rows[1:]] + [("bottom", row) for row in self.rows[:-1]]
            for band in touched:
                reach_left, reach_right = bands.get(band, (0.0, 0.0))
                bands[band] = (max(reach_left, left), max(reach_right, right))
        return bands, bottom, top


def _tick_fractions(ax, axis, locs) -> np.ndarray:
    """Tick locations as fractions of the axes (through the axis's scale and the view limits)."""
    locs = np.asarray(locs, dtype=float)
    points = np.column_stack([locs, np.zeros_like(locs)] if axis is ax.xaxis else [np.zeros_like(locs), locs])
    fractions = (ax.transScale + ax.transLimits).transform(points)
    return fractions[:, 0 if axis is ax.xaxis else 1]


def _measure(ax, renderer) -> tuple[list[_Decoration], tuple]:
    """Every label of `ax` as a box relative to its anchor, from one measurement each, and the
    ticks (location, label) measured."""
    signature = []
    decorations = []
    if ax.axison:
        box = ax.get_position(original=False).transformed(ax.figure.transSubfigure)
        for axis, along_x in ((ax.xaxis, True), (ax.yaxis, False)):
            ticks = axis._update_ticks()  # sets each tick's position and text, as drawing will
            signature.append(tuple((tick.get_loc(), tick.label1.get_text()) for tick in ticks))
            tick_boxes = {1: [], 2: []}
            fractions = _tick_fractions(ax, axis, [tick.get_loc() for tick in ticks]) if ticks else []
            for tick, fraction in zip(ticks, fractions):
                if not 0.0 - 1e-9 <= fraction <= 1.0 + 1e-9:
                    continue  # outside the view: not drawn
                for side, label in ((1, tick.label1), (2, tick.label2)):
                    if label.get_visible() and label.get_text():
                        extent = label.get_window_extent(renderer)
                        tick_boxes[side].append(extent)
                        fx, fy = (fraction, 0.0 if side == 1 else 1.0) if along_x else (0.0 if side == 1 else 1.0, fraction)
                        ax_x, ax_y = box.x0 + fx * box.width, box.y0 + fy * box.height
                        decorations.append(_Decoration(fx, fy, extent.x0 - ax_x, extent.x1 - ax_x,
                                                       extent.y0 - ax_y, extent.y1 - ax_y))
            label = axis.label
            if label.get_visible() and label.get_text():
                extent = label.get_window_extent(renderer)
                width, height = extent.width, extent.height
                pad = axis.labelpad * ax.figure.dpi / 72
                position = axis.get_label_position()
                if along_x:
                    if position == "bottom":
                        edge = min([b.y0 for b in tick_boxes[1]], default=box.y0) - box.y0 - pad
                        decorations.append(_Decoration(0.5, 0.0, -width / 2, width / 2, edge - height, edge))
                    else:
                        edge = max([b.y1 for b in tick_boxes[2]], default=box.y1) - box.y1 + pad
                        decorations.append(_Decoration(0.5, 1.0, -width / 2, width / 2, edge, edge + height))
                else:
                    if position == "left":
                        edge = min([b.x0 for b in tick_boxes[1]], default=box.x0) - box.x0 - pad
                        decorations.append(_Decoration(0.0, 0.5, edge - width, edge, -height / 2, height / 2))
                    else:
                        edge = max([b.x1 for b in tick_boxes[2]], default=box.x1) - box.x1 + pad
                        decorations.append(_Decoration(1.0, 0.5, edge, edge + width, -height / 2, height / 2))
            offset = axis.offsetText
            if offset.get_visible() and offset.get_text():
                extent = offset.get_window_extent(renderer)
                fx, fy = (1.0, 0.0) if along_x else (0.0, 1.0)
                ax_x, ax_y = box.x0 + fx * box.width, box.y0 + fy * box.height
                decorations.append(_Decoration(fx, fy, extent.x0 - ax_x, extent.x1 - ax_x,
                                               extent.y0 - ax_y, extent.y1 - ax_y))
    for title in (ax.title, ax._left_title, ax._right_title):
        if title.get_visible() and title.get_text():
            extent = title.get_window_extent(renderer)
            box = ax.get_position(original=False).transformed(ax.figure.transSubfigure)
            fx = {"left": 0.0, "center": 0.5, "right": 1.0}[title.get_horizontalalignment()]
            ax_x, ax_y = box.x0 + fx * box.width, box.y1
            decorations.append(_Decoration(fx, 1.0, extent.x0 - ax_x, extent.x1 - ax_x,
                                           extent.y0 - ax_y, extent.y1 - ax_y))
    return decorations, tuple(signature)


def _auto_ticked(ax) -> bool:
    """Whether the tick labels may change with the axes' size (a locator that counts the room)."""
    return ax.axison and any(not isinstance(axis.get_major_locator(), (FixedLocator, NullLocator))
                             for axis in (ax.xaxis, ax.yaxis))


def _tick_texts(ax) -> tuple:
    """The ticks drawing would show now (updated first, as drawing does)."""
    return tuple(tuple((tick.get_loc(), tick.label1.get_text()) for tick in axis._update_ticks())
                 for axis in (ax.xaxis, ax.yaxis))


class GridLayout(LayoutEngine):
    """Places every gridspec cell of a figure, and each colour bar beside its axes, in one pass.

    It handles what the visuals use: one gridspec of axes (with width and height ratios), colour
    bars made by `figure.colorbar(..., ax=...)` to the right of their parents, and figure legends
    placed `"outside lower center"`. Any other figure (subfigures, a second gridspec, colour bars
    elsewhere, figure-level texts) is handed to matplotlib's constrained layout instead.
    """

    _adjust_compatible = False
    _colorbar_gridspec = False  # colour bars get their own axes, placed here beside their parents

    def execute(self, fig: Figure) -> None:
        renderer = fig._get_renderer()
        dpi = fig.dpi
        fig_width, fig_height = fig.bbox.width, fig.bbox.height
        grid_axes, colorbars, gridspec = [], [], None
        for ax in fig.axes:
            info = getattr(ax, "_colorbar_info", None)
            spec = ax.get_subplotspec() if hasattr(ax, "get_subplotspec") else None
            if info is not None and info.get("location", "right") == "right":
                colorbars.append((ax, info))
            elif spec is not None and (gridspec is None or spec.get_gridspec() is gridspec):
                gridspec = spec.get_gridspec()
                grid_axes.append(ax)
            elif ax.get_in_layout():
                ConstrainedLayoutEngine().execute(fig)  # not a shape this engine knows
                return
        if gridspec is None:
            return
        if fig._suptitle is not None or fig._supxlabel is not None or fig._supylabel is not None or fig.texts:
            ConstrainedLayoutEngine().execute(fig)  # figure-level texts: not measured here
            return
        legends = [legend for legend in fig.legends if getattr(legend, "_outside_loc", None)]
        if any(legend._outside_loc != "lower" for legend in legends):
            ConstrainedLayoutEngine().execute(fig)
            return

        measured = []
        for ax in grid_axes:
            spec = ax.get_subplotspec()
            measured.append(_Measured(ax, spec.rowspan, spec.colspan, *_measure(ax, renderer)))
        trial_ticks = {id(m.ax): m.ticks for m in measured if _auto_ticked(m.ax)}
        bars = []
        for cax, info in colorbars:
            parents = [m for m in measured if m.ax in info["parents"]]
            if not parents:
                ConstrainedLayoutEngine().execute(fig)
                return
            bars.append((cax, info, parents, _Measured(cax, range(1), range(1), *_measure(cax, renderer))))
        bottom_reserve = sum(legend.get_window_extent(renderer).height for legend in legends)

        boxes = self._solve(gridspec, measured, bars, fig_width, fig_height, dpi, bottom_reserve)
        self._place(fig, measured, bars, boxes, dpi)
        # Locators that count the room may choose other ticks at the final size: measure those again.
        changed = False
        for m in measured:
            if id(m.ax) in trial_ticks and _tick_texts(m.ax) != trial_ticks[id(m.ax)]:
                m.decorations, m.ticks = _measure(m.ax, renderer)
                changed = True
        if changed:
            boxes = self._solve(gridspec, measured, bars, fig_width, fig_height, dpi, bottom_reserve)
            self._place(fig, measured, bars, boxes, dpi)

    @staticmethod
    def _solve(gridspec, measured, bars, fig_width, fig_height, dpi, bottom_reserve):
        """Cell boxes (x0, y0, x1, y1) in pixels, each column's and row's margins the largest its
        axes need. Widths depend on margins and a centred title's overhang on the width, so the
        arithmetic is repeated a few times; the labels themselves are not measured again."""
        rows, cols = gridspec.get_geometry()
        width_ratios = np.asarray(gridspec.get_width_ratios() or [1] * cols, dtype=float)
        height_ratios = np.asarray(gridspec.get_height_ratios() or [1] * rows, dtype=float)
        edge, pad = EDGE_PAD * dpi, CELL_PAD * dpi
        col_widths = width_ratios / width_ratios.sum() * fig_width * 0.8
        row_heights = height_ratios / height_ratios.sum() * fig_height * 0.8
        bar_cols = [max(p.cols.stop for p in parents) - 1 for _, _, parents, _ in bars]
        previous = None
        for _ in range(8):
            # Per column and band, how far labels reach left and right; per row, down and up.
            left: list[dict] = [{} for _ in range(cols)]
            right: list[dict] = [{} for _ in range(cols)]
            bottom, top = np.zeros(rows), np.zeros(rows)
            for m in measured:
                width = col_widths[m.cols.start:m.cols.stop].sum()
                height = row_heights[m.rows.start:m.rows.stop].sum()
                bands, b, t = m.extents(width, height)
                for band, (reach_left, reach_right) in bands.items():
                    column_left, column_right = left[m.cols.start], right[m.cols.stop - 1]
                    column_left[band] = max(column_left.get(band, 0.0), reach_left)
                    column_right[band] = max(column_right.get(band, 0.0), reach_right)
                bottom[m.rows.stop - 1] = max(bottom[m.rows.stop - 1], b)
                top[m.rows.start] = max(top[m.rows.start], t)
            # A colour bar stands beside its parents' axes, beyond the labels there.
            bar_x = []
            for (cax, info, parents, bar), last in zip(bars, bar_cols):
                thickness, gap, length = _bar_geometry(info, parents, col_widths, row_heights, dpi)
                bar_bands, _, _ = bar.extents(thickness, length)
                bar_left = max((reach for reach, _ in bar_bands.values()), default=0.0)
                bar_right = max((reach for _, reach in bar_bands.values()), default=0.0)
                first_row = min(p.rows.start for p in parents)
                last_row = max(p.rows.stop for p in parents) - 1
                beside = [("side", row) for row in range(first_row, last_row + 1)]
                beside += [("top", row) for row in range(first_row + 1, last_row + 1)]
                beside += [("bottom", row) for row in range(first_row, last_row)]
                offset = max(right[last].get(band, 0.0) for band in beside) + gap + bar_left
                bar_x.append(offset)
                for band in beside:
                    right[last][band] = offset + thickness + bar_right
            # Neighbouring columns need room for the larger of their facing reaches, band by band.
            gaps = [max((right[c].get(band, 0.0) + left[c + 1].get(band, 0.0)
                         for band in set(right[c]) | set(left[c + 1])), default=0.0) + 2 * pad
                    for c in range(cols - 1)]
            outer_left = max(left[0].values(), default=0.0) + pad
            outer_right = max(right[-1].values(), default=0.0) + pad
            free_width = fig_width - 2 * edge - outer_left - outer_right - sum(gaps)
            free_height = fig_height - 2 * edge - bottom_reserve - (bottom + top).sum() - 2 * pad * rows
            col_widths = np.maximum(free_width, 10 * cols) * width_ratios / width_ratios.sum()
            row_heights = np.maximum(free_height, 10 * rows) * height_ratios / height_ratios.sum()
            margins = np.array([*gaps, outer_left, outer_right, *bottom, *top])
            if previous is not None and np.max(np.abs(margins - previous)) < 0.25:
                break  # the overhangs no longer move: the widths they were computed for are final
            previous = margins
        col_x0 = edge + outer_left + np.cumsum(np.concatenate([[0.0], (col_widths[:-1] + np.asarray(gaps))]))
        row_y1 = fig_height - edge - np.cumsum(np.concatenate([[0], (top + bottom + 2 * pad + row_heights)[:-1]])) - pad - top
        boxes = {}
        for m in measured:
            x0 = col_x0[m.cols.start]
            x1 = col_x0[m.cols.stop - 1] + col_widths[m.cols.stop - 1]
            y1 = row_y1[m.rows.start]
            y0 = row_y1[m.rows.stop - 1] - row_heights[m.rows.stop - 1]
            boxes[id(m)] = (x0, y0, x1, y1)
        for (cax, info, parents, bar), last, offset in zip(bars, bar_cols, bar_x):
            thickness, gap, length = _bar_geometry(info, parents, col_widths, row_heights, dpi)
            x0 = col_x0[last] + col_widths[last] + offset
            y_low = min(boxes[id(p)][1] for p in parents)
            y_high = max(boxes[id(p)][3] for p in parents)
            anchor_y = info.get("anchor", (0.0, 0.5))[1]
            y0 = y_low + (y_high - y_low - length) * anchor_y
            boxes[id(bar)] = (x0, y0, x0 + thickness, y0 + length)
        return boxes

    @staticmethod
    def _place(fig, measured, bars, boxes, dpi):
        width, height = fig.bbox.width, fig.bbox.height
        for m in [*measured, *(bar for *_, bar in bars)]:
            x0, y0, x1, y1 = boxes[id(m)]
            m.ax._set_position(Bbox.from_extents(x0 / width, y0 / height, x1 / width, y1 / height))


def _bar_geometry(info, parents, col_widths, row_heights, dpi) -> tuple[float, float, float]:
    """A colour bar's (thickness, gap to its parents, length) in pixels, as `Figure.colorbar` sizes it:
    `shrink` of the parents' height, `aspect` times longer than thick, `pad` of the parents' width."""
    first_row = min(p.rows.start for p in parents)
    last_row = max(p.rows.stop for p in parents)
    first_col = min(p.cols.start for p in parents)
    last_col = max(p.cols.stop for p in parents)
    parents_height = row_heights[first_row:last_row].sum()
    parents_width = col_widths[first_col:last_col].sum()
    length = info.get("shrink", 1.0) * parents_height
    thickness = min(length / info.get("aspect", 20), info.get("fraction", 0.15) * parents_width)
    gap = info.get("pad", 0.05) * parents_width
    return thickness, gap, length
