"""Plot for the "position-encoding" visual: (a) the PE(p)·PE(q) matrix with its constant diagonals, (b) the
distance between positions k apart, and (c) a few waves continuing past the training length.
"""

from __future__ import annotations

import matplotlib
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from app.visuals.base import DPI, NARROW_WIDTH
from app.visuals.kinds.position_encoding import DOTTED_LENGTH, PANELS, SMOOTHED_LENGTH, format_period
from app.visuals.words import format_small

from .figure import EDGE, SEQUENTIAL, fixed_grid, new_figure, text_width

BEYOND_SHADE = "0.87"
MIN_PERIOD_PIXELS = 5  # a wave whose turns are closer than this is drawn as the band it fills
STRIP_LEFT_GUESS = 1.1  # inches left of (c)'s strips, to decide which waves fill a band before measuring
TEXT = 8  # points: every label in the narrow layout, and (b)/(c)'s legends in both
COLOURS = matplotlib.colormaps[SEQUENTIAL]
SINE, COSINE = COLOURS(0.25), COLOURS(0.68)


def panel_title(option: str, what: str, result) -> str:
    """'(a) Relative  ✓ you ticked it' over what the panel shows; the option named as Q7 names it."""
    mark = ("" if not result.chosen else "  ✓ you ticked it" if option in result.chosen
            else "  ✗ not ticked, but it holds")
    return f"{PANELS[option]} {option.replace('-', ' ').capitalize()}{mark}\n{what}"


def draw_position_encoding(result, inches: tuple[float, float]) -> Figure:
    """result: a PositionEncodingResult (app.visuals.kinds.position_encoding)."""
    width, height = inches
    narrow = width == NARROW_WIDTH
    figure = new_figure(width, height, layout=None)
    tick_size = TEXT if narrow else 9
    length, train_length = len(result.encoding), result.train_length
    past_training = train_length < length

    def axes(left, bottom, box_width, box_height):  # inches from the figure's lower-left corner
        return figure.add_axes((left / width, bottom / height, box_width / width, box_height / height))

    def finish(ax, xlabel, ylabel, title):
        ax.tick_params(labelsize=tick_size)
        ax.set_xlabel(xlabel, fontsize=tick_size)
        ax.set_ylabel(ylabel, fontsize=tick_size)
        return ax.set_title(title, fontsize=9, loc="left")

    if narrow:  # stacked: (a) over (b) over (c); every block is its axes plus the labels above and below it
        heat_box = (0.58, height - 0.55 - 2.2, 2.2, 2.2)
        distance_box = (0.58, heat_box[1] - 0.42 - 0.48 - 2.0, width - 0.58 - 0.12, 2.0)
        strips_top = distance_box[1] - 0.42 - 0.98
    else:  # (a) beside (b), (c) across the width below them
        heat_box = (0.62, height - 0.5 - 2.45, 2.45, 2.45)
        distance_left = heat_box[0] + 2.45 + 0.08 + 0.1 + 0.42 + 0.6  # colour bar, its labels, (b)'s labels
        distance_box = (distance_left, heat_box[1], width - distance_left - 0.15, 2.45)
        strips_top = heat_box[1] - 0.42 - 0.7

    # (a) The colours span the data: from the smallest dot product to the diagonal's d/2, the largest.
    ax = axes(*heat_box)
    low, high = float(result.similarity.min()), float(result.similarity[0, 0])
    image = ax.imshow(result.similarity, cmap=SEQUENTIAL, vmin=low, vmax=high, aspect="auto",
                      interpolation="nearest" if length <= SMOOTHED_LENGTH else "antialiased",
                      interpolation_stage="data")
    if past_training:  # the trained positions' square, white dashes on black so it shows on every colour
        for colour, style, line_width in (("black", "-", 2.2), ("white", "--", 1.2)):
            ax.add_patch(Rectangle((-0.5, -0.5), train_length, train_length, fill=False, edgecolor=colour,
                                   linestyle=style, linewidth=line_width))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    finish(ax, "position q", "position p", panel_title("relative", "PE(p)·PE(q): constant along each diagonal", result))
    colourbar = figure.colorbar(image, cax=axes(heat_box[0] + heat_box[2] + 0.08, heat_box[1], 0.1, heat_box[3]))
    ends = [format_small(value) for value in (low, high)]  # a true minus sign, and never "-0"
    colourbar.set_ticks([low, high], labels=["0" if float(end) == 0 else end.replace("-", "−") for end in ends])
    colourbar.ax.tick_params(labelsize=tick_size)

    # (b) The distance to the position k further on, the same from every p (the spread is in the alt text):
    # only k = 0 reaches zero.
    ax = axes(*distance_box)
    distances, k = result.offset_distance, result.closest_offset
    ax.plot(range(1, length), distances[1:], linestyle="none", marker="o", markersize=3.5 if length <= 64 else 2.0,
            color=COLOURS(0.3), label="distance at offset k ≥ 1")
    ax.plot([0], [0.0], linestyle="none", marker="s", markersize=5, markerfacecolor="white",
            markeredgecolor="black", label="k = 0: the position itself")
    ring = ax.plot([k], [result.min_distance], linestyle="none", marker="o", markersize=10, markerfacecolor="none",
                   markeredgecolor="black", markeredgewidth=1.4)[0]
    floor = ax.axhline(result.min_distance, color="black", linestyle=":", linewidth=1.0)
    ax.set_xlim(-0.03 * (length - 1) - 0.5, (length - 1) * 1.03 + 0.5)
    ax.set_ylim(0, float(distances.max()) * 1.55)  # zero (a collision) on the axis; headroom for the legend
    ax.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
    finish(ax, "offset k = q − p", "‖PE(p) − PE(p+k)‖",
           panel_title("unique", "‖PE(p) − PE(p+k)‖ > 0 for every k ≥ 1", result))
    handles, labels = ax.get_legend_handles_labels()
    ax.legend([*handles, (ring, floor)], [*labels, f"closest: k = {k}, {format_small(result.min_distance)}"
                                          + (" (near-collision)" if result.near_collision else "")],
              fontsize=TEXT, loc="upper center", handlelength=1.6, borderaxespad=0.3)

    # (c) One strip per frequency pair, labelled with its dimensions and period; sine solid, cosine dashed. A wave
    # whose turns are closer than a few pixels would alias into a moiré: it is drawn as the band it fills.
    bands = [(width - 0.15 - STRIP_LEFT_GUESS) * DPI * wave.period / length < MIN_PERIOD_PIXELS
             for wave in result.waves]
    strip_labels = [f"dims {2 * wave.pair}, {2 * wave.pair + 1}\nperiod {format_period(wave.period)}"
                    + (f"\n{length / wave.period:.0f} turns: a band" if band else "")
                    for wave, band in zip(result.waves, bands)]
    # The strips start after their labels: the widest line, its pad and the "−1" tick label.
    left = (EDGE + text_width(figure, [line for label in strip_labels for line in label.split("\n")], TEXT)
            + (4 + 3.5 + 3.5) / 72 + text_width(figure, ["−1"], tick_size))
    strip_width, dotted = width - left - 0.15, length <= DOTTED_LENGTH
    fixed_grid(figure, rows=len(result.waves), left=left, right=0.15, bottom=0.45, top=height - strips_top,
               row_gap=0.1)
    strips = figure.subplots(len(result.waves), 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    strips[0].set_xlim(-0.5, length - 0.5)
    strips[0].set_ylim(-1.3, 1.3)
    strips[0].set_yticks([-1, 1], labels=["−1", "1"])
    strips[0].xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    for ax, wave, band, label in zip(strips, result.waves, bands, strip_labels):
        if past_training:
            ax.axvspan(train_length - 0.5, length - 0.5, color=BEYOND_SHADE, zorder=0, linewidth=0)
        if band:
            ax.fill_between([-0.5, length - 0.5], -1, 1, color=SINE, alpha=0.35, linewidth=0)
        else:
            ax.plot(result.fine_positions, wave.fine_sine, color=SINE, linewidth=1.3)
            ax.plot(result.fine_positions, wave.fine_cosine, color=COSINE, linewidth=1.3, linestyle="--")
        if dotted:
            for column, colour in ((2 * wave.pair, SINE), (2 * wave.pair + 1, COSINE)):
                ax.plot(range(length), result.encoding[:, column], linestyle="none", marker="o", markersize=2.6,
                        color=colour)
        ax.tick_params(labelsize=tick_size)
        ax.set_ylabel(label, fontsize=TEXT, rotation=0, ha="right", va="center", labelpad=4)
    ax.set_xlabel("position p", fontsize=tick_size)

    handles = [Line2D([], [], color=colour, linewidth=1.3, linestyle=style, marker="o" if dotted else None,
                      markersize=2.6) for colour, style in ((SINE, "-"), (COSINE, "--"))]
    labels = ["sin, dim 2i (solid)", "cos, dim 2i+1 (dashed)"]
    if past_training:
        handles.append(Patch(facecolor=BEYOND_SHADE, edgecolor="none"))
        labels.append(f"past training: p ≥ {train_length}")
        what = f"the same formula past the training length T = {train_length}"
    else:
        every = "both" if length == 2 else f"all {length}"
        what = f"{every} positions lie within the training length T = {train_length}"
    # On a phone the strip labels take a third of the width: title and legend start at the figure's edge.
    start = (0.08 - left) / strip_width if narrow else 0.0  # in the top strip's axes fraction
    columns = 1 if narrow else 3
    strips[0].legend(handles, labels, fontsize=TEXT, loc="lower left", bbox_to_anchor=(start, 1.0), ncol=columns,
                     frameon=False, borderaxespad=0.1, borderpad=0.2, handlelength=2.2, columnspacing=1.0)
    legend_rows = -(-len(labels) // columns)
    strips[0].set_title(panel_title("any-length", what, result), fontsize=9, loc="left",
                        pad=5 + legend_rows * 11.5).set_x(start)
    return figure
